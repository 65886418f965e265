"""Invoice exports for customers who want a file instead of the portal."""

import csv
import io

from .models import Invoice


def invoice_csv(invoice: Invoice) -> str:
    """One row per line item plus a total row; amounts in cents, as everywhere."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["number", "description", "quantity", "unit_cents", "total_cents"])
    for item in invoice.items:
        w.writerow([invoice.number, item.description, item.quantity, item.unit_cents, item.total_cents])
    w.writerow([invoice.number, "TOTAL", "", "", invoice.total_cents])
    return buf.getvalue()


def invoice_pdf(invoice: Invoice) -> bytes:
    """The invoice as a one-page PDF."""
    # TODO: render with reportlab once it is added to the dependencies
    raise NotImplementedError("PDF export")
