from datetime import date

from ledger.__main__ import main
from ledger.invoices import create_invoice
from ledger.models import Invoice, LineItem


def test_balance_prints_euros(db, capsys):
    items = [LineItem(description="Consulting", quantity=3, unit_cents=12000)]
    create_invoice(db, Invoice(customer_id=1, number="2025-001", issued=date(2025, 3, 1), items=items))
    assert main(["balance", "1", "--db", db.path]) == 0
    assert capsys.readouterr().out == "360.00\n"
