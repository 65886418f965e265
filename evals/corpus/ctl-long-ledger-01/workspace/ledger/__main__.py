"""`python -m ledger balance CUSTOMER_ID [--db PATH]`: the open amount of a customer."""

import argparse
import os
import sys
from typing import List, Optional

from .db import Database
from .invoices import customer_balance


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="ledger")
    sub = parser.add_subparsers(dest="command", required=True)
    bal = sub.add_parser("balance", help="open amount of a customer")
    bal.add_argument("customer_id", type=int)
    bal.add_argument("--db", default=os.environ.get("LEDGER_DB", "ledger.sqlite"))
    args = parser.parse_args(argv)
    db = Database(args.db)
    cents = customer_balance(db, args.customer_id)
    print(f"{cents // 100}.{cents % 100:02d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
