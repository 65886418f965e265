from datetime import date

from ledger.exports import invoice_csv
from ledger.models import Invoice, LineItem


def test_csv_has_items_and_total():
    inv = Invoice(customer_id=1, number="2025-007", issued=date(2025, 5, 2),
                  items=[LineItem(description="Audit", quantity=2, unit_cents=50000),
                         LineItem(description="Travel", quantity=1, unit_cents=12345)])
    rows = invoice_csv(inv).strip().splitlines()
    assert rows[0] == "number,description,quantity,unit_cents,total_cents"
    assert rows[1] == "2025-007,Audit,2,50000,100000"
    assert rows[-1] == "2025-007,TOTAL,,,112345"
