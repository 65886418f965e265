from datetime import date
from typing import List, Optional

from pydantic import BaseModel, validator


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
