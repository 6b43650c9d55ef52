"""Classification with an enum: each support ticket gets exactly one category and a priority.

python examples/classification.py
"""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import BaseModel

import structgen
from structgen.models import load_llama, require_model


class Category(str, enum.Enum):
    billing = "billing"
    bug = "bug"
    feature_request = "feature_request"
    account = "account"


class Ticket(BaseModel):
    category: Category
    priority: Literal["low", "medium", "high"]


TICKETS = [
    "I was charged twice for my subscription this month.",
    "The app crashes whenever I open the settings page.",
    "It would be great if you supported dark mode.",
    "I can't log in, my password reset email never arrives.",
]


def main(llm: Any = None) -> list[Ticket]:
    llm = llm or load_llama(require_model("smollm2"), n_ctx=2048)
    out = []
    for text in TICKETS:
        messages = [
            {
                "role": "user",
                "content": f"Classify this support ticket (billing, bug, feature_request or account):\n{text}",
            }
        ]
        ticket = structgen.generate(llm, Ticket, messages, temperature=0.0)
        print(f"{ticket.category.value:16s} {ticket.priority:7s} {text}")
        out.append(ticket)
    return out


if __name__ == "__main__":
    main()
