import re
from datetime import date
from typing import List, Optional

from pydantic import BaseModel, validator


def parse_amount(text: str) -> int | None:
    """Integer cents from "12.50", "12,50", "€12.50" or "1250c"; None for empty input."""
    s = text.strip().lstrip("€").strip()
    match s:
        case "":
            return None
        case _ if s.endswith("c"):
            return int(s[:-1])
        case _ if re.fullmatch(r"\d+([.,]\d{1,2})?", s):
            units, _, frac = s.replace(",", ".").partition(".")
            return int(units) * 100 + int(frac.ljust(2, "0") or 0)
        case _:
            raise ValueError(f"not an amount: {text!r}")


class LineItem(BaseModel):
    description: str
    quantity: int
    unit_cents: int

    @validator("quantity")
    def positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("quantity must be positive")
        return v

    @property
    def total_cents(self) -> int:
        return self.quantity * self.unit_cents


class Invoice(BaseModel):
    id: Optional[int] = None
    customer_id: int
    number: str
    issued: date
    due: Optional[date] = None
    items: List[LineItem] = []
    paid: bool = False

    @property
    def total_cents(self) -> int:
        return sum(i.total_cents for i in self.items)
