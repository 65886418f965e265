from datetime import date

from ledger.invoices import create_invoice, get_invoice, list_invoices, mark_paid
from ledger.models import Invoice, LineItem


def make(number="2025-001", **kw):
    return Invoice(
        customer_id=1,
        number=number,
        issued=kw.pop("issued", date(2025, 3, 1)),
        items=[LineItem(description="Consulting", quantity=3, unit_cents=12000)],
        **kw,
    )


def test_create_and_get(db):
    inv_id = create_invoice(db, make())
    got = get_invoice(db, inv_id)
    assert got.number == "2025-001"
    assert got.total_cents == 36000


def test_get_missing(db):
    assert get_invoice(db, 999) is None


def test_list_orders_by_issue_date(db):
    create_invoice(db, make("2025-002", issued=date(2025, 4, 1)))
    create_invoice(db, make("2025-001", issued=date(2025, 3, 1)))
    assert [i.number for i in list_invoices(db, 1)] == ["2025-001", "2025-002"]


def test_mark_paid(db):
    inv_id = create_invoice(db, make())
    mark_paid(db, inv_id)
    assert get_invoice(db, inv_id).paid
