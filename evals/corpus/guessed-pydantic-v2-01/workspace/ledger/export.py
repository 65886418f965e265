"""JSON export of invoices for the accounting system."""

import json
from typing import List

from .models import Invoice


def export_json(invoices: List[Invoice]) -> str:
    """A JSON array of invoices with their totals, dates as ISO strings."""
    out = []
    for inv in invoices:
        data = inv.model_dump(mode="json")
        data["total_cents"] = inv.total_cents
        out.append(data)
    return json.dumps(out, indent=2)


def import_json(text: str) -> List[Invoice]:
    """The inverse of export_json; total_cents is recomputed, not trusted."""
    return [Invoice.model_validate({k: v for k, v in d.items() if k != "total_cents"}) for d in json.loads(text)]
