"""A thin wrapper over sqlite3 with the three calls the code base uses."""

import sqlite3
from contextlib import contextmanager
from typing import Any, Iterator, List, Optional, Sequence


class Database:
    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = sqlite3.connect(path)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA foreign_keys = ON")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cur = self.conn.execute(sql, params)
        self.conn.commit()
        return cur.lastrowid

    def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Optional[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchone()

    def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> List[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        try:
            yield self.conn
            self.conn.commit()
        except Exception:
            self.conn.rollback()
            raise

    def migrate(self, directory: str) -> None:
        import os

        self.conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY)")
        done = {r["name"] for r in self.fetch_all("SELECT name FROM schema_migrations")}
        for name in sorted(os.listdir(directory)):
            if name.endswith(".sql") and name not in done:
                with open(os.path.join(directory, name)) as f:
                    self.conn.executescript(f.read())
                self.execute("INSERT INTO schema_migrations (name) VALUES (?)", (name,))
