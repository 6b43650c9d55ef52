"""The demo behind ``structgen demo``: a small real model fills a Pydantic model from a prompt.

It prints the validated object, what the same model writes without structgen (and whether that
parses), and the per-token cost of the masks next to the model's own time per token.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any, Literal

from pydantic import BaseModel, Field

TEXT = (
    "Maria Lopez is a 34-year-old architect who lives in Valencia, Spain. "
    "She speaks Spanish, Catalan and English, and her email is maria.lopez@example.com."
)


class Address(BaseModel):
    city: str = Field(max_length=40)
    country: str = Field(max_length=40)


class Person(BaseModel):
    name: str = Field(max_length=60)
    age: int = Field(ge=0, le=120)
    occupation: str = Field(max_length=40)
    languages: list[str] = Field(max_length=5)
    address: Address
    contact: Literal["email", "phone", "none"]


def messages() -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You extract facts from text into JSON."},
        {
            "role": "user",
            "content": f"Text: {TEXT}\n\nWrite the person as JSON with the keys name, age, occupation, languages, address (city, country) and contact.",  # noqa: E501
        },
    ]


def run(llm: Any, *, seed: int = 0, temperature: float = 0.0, out: Any = None) -> Person:
    """Run the demo with a loaded ``llama_cpp.Llama``; returns the validated :class:`Person`."""
    from .generate import generate_result
    from .integrations.protocol import as_runtime

    out = out or sys.stdout
    result = generate_result(llm, Person, messages(), max_tokens=200, temperature=temperature, seed=seed)
    person: Person = result.value
    print("structgen.generate(llm, Person, prompt) returned a validated Person:\n", file=out)
    print(f"  {person!r}\n", file=out)
    print(person.model_dump_json(indent=2), file=out)
    free = _unconstrained(as_runtime(llm), seed)
    print("\nThe same model and prompt without structgen wrote:\n", file=out)
    lines = free.strip().splitlines()
    print("  " + "\n  ".join(line[:100] for line in lines[:10]) + ("\n  ..." if len(lines) > 10 else ""), file=out)
    print(f"\n  -> {_verdict(free)}\n", file=out)
    s = result.stats
    share = 100 * s.mask_ms_per_token / s.model_ms_per_token if s.model_ms_per_token else 0.0
    print(f"{s.output_tokens} tokens ({s.forced_tokens} forced without a forward pass)", file=out)
    print(f"  model forward pass     {s.model_ms_per_token:8.2f} ms/token", file=out)
    print(f"  structgen mask         {s.mask_ms_per_token:8.2f} ms/token ({share:.0f}% of the model's time)", file=out)
    print(
        f"  added latency          {s.overhead_ms_per_token:8.2f} ms/token (masks are computed during the forward pass)",  # noqa: E501
        file=out,
    )
    return person


def _unconstrained(runtime: Any, seed: int) -> str:
    """Greedy output of the runtime for the demo prompt with no constraint (at most 200 tokens)."""
    import numpy as np

    ids = runtime.encode_prompt(messages())
    runtime.start(ids)
    eos = set(runtime.vocab.eos_token_ids)
    out: list[int] = []
    for _ in range(200):
        token = int(np.argmax(runtime.logits()))
        if token in eos:
            break
        out.append(token)
        runtime.feed([token])
    return runtime.vocab.detokenize(out).decode("utf-8", errors="replace")


def _verdict(text: str) -> str:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return f"not JSON ({e.msg} at line {e.lineno}, column {e.colno})"
    try:
        Person.model_validate(data)
    except Exception as e:  # noqa: BLE001 - pydantic.ValidationError
        first = str(e).splitlines()[1:2]
        return f"JSON, but not a valid Person ({first[0] if first else e})"
    return "this time it happened to be a valid Person"


def main(argv: list[str] | None = None) -> int:
    from .models import load_llama, require_model

    llm = load_llama(require_model("smollm2"), n_ctx=2048)
    with contextlib.closing(llm):
        run(llm)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
