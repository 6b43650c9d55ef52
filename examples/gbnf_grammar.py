"""A GBNF grammar (llama.cpp's dialect) as the output type: the result is the text itself.

python examples/gbnf_grammar.py
"""

from __future__ import annotations

from typing import Any

import structgen
from structgen import Grammar
from structgen.models import load_llama, require_model

GRAMMAR = r"""
root   ::= answer ": " reason "."
answer ::= "yes" | "no"
reason ::= [a-zA-Z ,']{10,120}
"""


def main(llm: Any = None, *, seed: int = 0) -> str:
    llm = llm or load_llama(require_model("smollm2"), n_ctx=2048)
    grammar = Grammar.from_gbnf(GRAMMAR)
    messages = [{"role": "user", "content": "Is the Pacific the largest ocean? Answer yes or no, then give a reason."}]
    text = structgen.generate(llm, grammar, messages, temperature=0.0, seed=seed, max_tokens=60)
    print(text)
    assert grammar.matches(text)
    return text


if __name__ == "__main__":
    main()
