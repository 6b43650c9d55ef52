"""A realistic Pydantic model for the examples and benchmarks: a customer order.

It has what real structured-output models have: nested models, optional fields, lists with
bounds, string enums, a UUID, a datetime, and constrained strings and numbers. Running this file
writes its ``model_json_schema()`` to ``realistic_model.json`` beside it;
``tests/test_schemas_dir.py`` checks that the stored file matches the model.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Optional
from uuid import UUID

from pydantic import BaseModel, Field


class Currency(str, Enum):
    EUR = "EUR"
    USD = "USD"
    GBP = "GBP"
    JPY = "JPY"
    CHF = "CHF"


class OrderStatus(str, Enum):
    PENDING = "pending"
    PAID = "paid"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"


class Address(BaseModel):
    street: str = Field(min_length=1, max_length=120)
    city: str = Field(min_length=1, max_length=80)
    postal_code: str = Field(pattern=r"^[0-9A-Z][0-9A-Z -]{1,8}[0-9A-Z]$")
    country: str = Field(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2 code")
    region: Optional[str] = Field(default=None, max_length=80)


class Customer(BaseModel):
    id: UUID
    name: str = Field(min_length=1, max_length=100)
    email: str = Field(pattern=r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")
    phone: Optional[str] = Field(default=None, pattern=r"^\+[1-9][0-9]{6,14}$")
    loyalty_points: int = Field(default=0, ge=0)


class LineItem(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-[0-9]{4,6}$")
    name: str = Field(min_length=1, max_length=200)
    quantity: int = Field(ge=1, le=1000)
    unit_price: float = Field(ge=0, le=1000000)
    discount: Optional[float] = Field(default=None, ge=0, le=1)
    tags: list[str] = Field(default_factory=list, max_length=10)


class Order(BaseModel):
    order_id: UUID
    created_at: datetime
    status: OrderStatus
    currency: Currency
    customer: Customer
    shipping_address: Address
    billing_address: Optional[Address] = None
    items: list[LineItem] = Field(min_length=1, max_length=100)
    notes: Optional[str] = Field(default=None, max_length=2000)
    priority: int = Field(default=3, ge=1, le=5)
    gift: bool = False


SCHEMA_FILE = Path(__file__).with_name("realistic_model.json")


def exported_schema() -> dict:
    """The JSON Schema of :class:`Order` as stored in ``realistic_model.json``."""
    return Order.model_json_schema()


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(exported_schema(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
