"""Extraction into a nested model: an invoice with an address and line items.

python examples/extraction.py
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

import structgen
from structgen.models import load_llama, require_model


class Address(BaseModel):
    street: str = Field(max_length=60)
    city: str = Field(max_length=40)
    postcode: str = Field(pattern=r"^[0-9]{5}$")


class LineItem(BaseModel):
    description: str = Field(max_length=40)
    quantity: int = Field(ge=1, le=1000)
    unit_price: float = Field(ge=0)


class Invoice(BaseModel):
    number: str = Field(pattern=r"^INV-[0-9]{4}$")
    customer: str = Field(max_length=60)
    billing_address: Address
    items: list[LineItem] = Field(min_length=1, max_length=5)


TEXT = """Invoice INV-0042 for Nordwind GmbH, Hafenstrasse 12, 20457 Hamburg.
3 x standing desk at 420.00 each; 6 x monitor arm at 35.50 each."""


def main(llm: Any = None, *, seed: int = 0) -> Invoice:
    llm = llm or load_llama(require_model("smollm2"), n_ctx=2048)
    messages = [{"role": "user", "content": f"Extract the invoice as JSON:\n{TEXT}"}]
    invoice = structgen.generate(llm, Invoice, messages, temperature=0.0, seed=seed, max_tokens=300)
    print(invoice.model_dump_json(indent=2))
    return invoice


if __name__ == "__main__":
    main()
