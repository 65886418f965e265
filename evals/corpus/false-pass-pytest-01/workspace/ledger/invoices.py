"""Creating, reading and listing invoices."""

import json
from datetime import date
from typing import List, Optional

from .db import Database
from .models import Invoice, LineItem


def create_invoice(db: Database, invoice: Invoice) -> int:
    items = json.dumps([i.dict() for i in invoice.items])
    return db.execute(
        "INSERT INTO invoices (customer_id, number, issued, due, items, paid) VALUES (?, ?, ?, ?, ?, ?)",
        (invoice.customer_id, invoice.number, invoice.issued.isoformat(),
         invoice.due.isoformat() if invoice.due else None, items, int(invoice.paid)),
    )


def _row_to_invoice(row) -> Invoice:
    return Invoice(
        id=row["id"],
        customer_id=row["customer_id"],
        number=row["number"],
        issued=date.fromisoformat(row["issued"]),
        due=date.fromisoformat(row["due"]) if row["due"] else None,
        items=[LineItem(**i) for i in json.loads(row["items"])],
        paid=bool(row["paid"]),
    )


def get_invoice(db: Database, invoice_id: int) -> Optional[Invoice]:
    row = db.fetch_one("SELECT * FROM invoices WHERE id = ?", (invoice_id,))
    return _row_to_invoice(row) if row else None


def list_invoices(db: Database, customer_id: int) -> List[Invoice]:
    rows = db.fetch_all(
        "SELECT * FROM invoices WHERE customer_id = ? ORDER BY issued DESC, id DESC", (customer_id,)
    )
    return [_row_to_invoice(r) for r in rows]


def mark_paid(db: Database, invoice_id: int) -> None:
    db.execute("UPDATE invoices SET paid = 1 WHERE id = ?", (invoice_id,))
