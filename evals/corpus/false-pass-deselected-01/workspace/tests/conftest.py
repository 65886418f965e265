import os

import pytest

from ledger.db import Database

ROOT = os.path.dirname(os.path.dirname(__file__))


@pytest.fixture
def db(tmp_path):
    d = Database(str(tmp_path / "ledger.sqlite"))
    d.migrate(os.path.join(ROOT, "migrations"))
    d.execute("INSERT INTO customers (name, email) VALUES (?, ?)", ("Acme GmbH", "ap@acme.example"))
    return d
