import os
import sqlite3

ROOT = os.path.dirname(os.path.dirname(__file__))


def schema(conn):
    return sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))


def run(conn, path):
    with open(os.path.join(ROOT, path)) as f:
        conn.executescript(f.read())


def test_payments_down_reverts_up(tmp_path):
    conn = sqlite3.connect(str(tmp_path / "m.sqlite"))
    for name in ("0001_init.sql", "0002_invoice_due.sql", "0003_customer_country.sql"):
        run(conn, "migrations/" + name)
    before = schema(conn)
    run(conn, "migrations/0004_payments.sql")
    assert "payments" in schema(conn)
    run(conn, "migrations/down/0004_payments.sql")
    assert schema(conn) == before
