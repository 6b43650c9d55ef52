"""A GLRM grammar (glrmask's format) as the output type: a small command language for a robot.

python examples/glrm_grammar.py
"""

from __future__ import annotations

from typing import Any

import structgen
from structgen import Grammar
from structgen.models import load_llama, require_model

GRAMMAR = r"""
glrm 1;
start program;
t NUMBER = /[1-9][0-9]?/;
nt direction = "north" | "south" | "east" | "west";
nt step = "move " direction " " NUMBER ";";
nt program = step (" " step){0,4};
"""


def main(llm: Any = None, *, seed: int = 0) -> str:
    llm = llm or load_llama(require_model("smollm2"), n_ctx=2048)
    grammar = Grammar.from_glrm(GRAMMAR)
    messages = [
        {"role": "system", "content": "You control a robot with commands like: move north 3; move east 1;"},
        {"role": "user", "content": "Go two steps north, then five steps east."},
    ]
    program = structgen.generate(llm, grammar, messages, temperature=0.0, seed=seed, max_tokens=60)
    print(program)
    assert grammar.matches(program)
    return program


if __name__ == "__main__":
    main()
