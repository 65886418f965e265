"""The small projects the corpus sessions work on. Each function returns a fresh
{path: content} dict; cases copy and adjust them."""


def ledger():
    """Python: an invoicing library over sqlite (pydantic 1.x)."""
    return {
        "pyproject.toml": '''[project]
name = "ledger"
version = "0.7.2"
description = "Invoices, customers and payments for the back office"
requires-python = ">=3.8"
dependencies = [
    "pydantic==1.10.13",
    "python-dateutil>=2.8",
]

[project.optional-dependencies]
dev = ["pytest>=8", "pytest-cov"]

[tool.pytest.ini_options]
testpaths = ["tests"]
''',
        "AGENTS.md": '''# Working on ledger

- Python 3.8 is still deployed on the billing hosts: no `match`, no `X | Y` type unions,
  no `dict[str, int]` generics at runtime. Use `typing.Optional`, `typing.Dict`.
- Released migrations (everything in `migrations/` that is on `main`) are immutable.
  Schema changes go in a new numbered file.
- Run `pytest` before saying anything is done.
- Money is integer cents everywhere. Never floats.
''',
        "ledger/__init__.py": '''"""Back-office invoicing."""

__version__ = "0.7.2"
''',
        "ledger/db.py": '''"""A thin wrapper over sqlite3 with the three calls the code base uses."""

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
''',
        "ledger/models.py": '''from datetime import date
from typing import List, Optional

from pydantic import BaseModel, validator


class LineItem(BaseModel):
    description: str
    quantity: int
    unit_cents: int

    @validator("quantity")
    def positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("quantity must be positive")
        return v

    @property
    def total_cents(self) -> int:
        return self.quantity * self.unit_cents


class Invoice(BaseModel):
    id: Optional[int] = None
    customer_id: int
    number: str
    issued: date
    due: Optional[date] = None
    items: List[LineItem] = []
    paid: bool = False

    @property
    def total_cents(self) -> int:
        return sum(i.total_cents for i in self.items)
''',
        "ledger/invoices.py": '''"""Creating, reading and listing invoices."""

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
        "SELECT * FROM invoices WHERE customer_id = ? ORDER BY issued", (customer_id,)
    )
    return [_row_to_invoice(r) for r in rows]


def mark_paid(db: Database, invoice_id: int) -> None:
    db.execute("UPDATE invoices SET paid = 1 WHERE id = ?", (invoice_id,))
''',
        "migrations/0001_init.sql": '''CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE
);

CREATE TABLE invoices (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    number TEXT NOT NULL UNIQUE,
    issued TEXT NOT NULL,
    items TEXT NOT NULL,
    paid INTEGER NOT NULL DEFAULT 0
);
''',
        "migrations/0002_invoice_due.sql": '''ALTER TABLE invoices ADD COLUMN due TEXT;
''',
        "migrations/0003_customer_country.sql": '''ALTER TABLE customers ADD COLUMN country TEXT NOT NULL DEFAULT 'DE';
''',
        "tests/conftest.py": '''import os

import pytest

from ledger.db import Database

ROOT = os.path.dirname(os.path.dirname(__file__))


@pytest.fixture
def db(tmp_path):
    d = Database(str(tmp_path / "ledger.sqlite"))
    d.migrate(os.path.join(ROOT, "migrations"))
    d.execute("INSERT INTO customers (name, email) VALUES (?, ?)", ("Acme GmbH", "ap@acme.example"))
    return d
''',
        "tests/test_invoices.py": '''from datetime import date

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
''',
        ".gitignore": '''__pycache__/
*.pyc
.pytest_cache/
*.sqlite
dist/
.venv/
''',
    }


def logtail():
    """Rust: a CLI that filters JSON log lines."""
    return {
        "Cargo.toml": '''[package]
name = "logtail"
version = "0.4.1"
edition = "2021"

[dependencies]
anyhow = "1"
chrono = { version = "0.4", default-features = false, features = ["std", "clock"] }
clap = { version = "4.5", features = ["derive"] }
serde_json = "1"
''',
        "src/main.rs": '''use std::io::{self, BufRead, Write};

use anyhow::Result;
use clap::Parser;
use logtail::{filter::Filter, output, parse::parse_line};

/// Filter and pretty-print JSON log lines from standard input.
#[derive(Parser)]
struct Args {
    /// Least level to show (trace, debug, info, warn, error).
    #[arg(long, default_value = "info")]
    level: String,
    /// Only lines whose target starts with this.
    #[arg(long)]
    target: Option<String>,
    /// Print the raw JSON instead of the formatted line.
    #[arg(long)]
    raw: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let filter = Filter::new(&args.level, args.target.as_deref())?;
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        let Some(record) = parse_line(&line) else { continue };
        if !filter.accepts(&record) {
            continue;
        }
        if args.raw {
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "{}", output::format(&record))?;
        }
    }
    Ok(())
}
''',
        "src/lib.rs": '''//! Filtering and formatting of JSON log lines.

pub mod filter;
pub mod output;
pub mod parse;
''',
        "src/parse.rs": '''use chrono::{DateTime, Utc};
use serde_json::Value;

/// The level of a record, ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn from_name(name: &str) -> Option<Level> {
        match name.to_ascii_lowercase().as_str() {
            "trace" => Some(Level::Trace),
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" | "warning" => Some(Level::Warn),
            "error" => Some(Level::Error),
            _ => None,
        }
    }
}

/// One parsed log line.
#[derive(Debug, Clone)]
pub struct Record {
    pub time: Option<DateTime<Utc>>,
    pub level: Level,
    pub target: String,
    pub message: String,
}

/// Parses one JSON log line; lines that are not JSON objects give `None`.
pub fn parse_line(line: &str) -> Option<Record> {
    let v: Value = serde_json::from_str(line).ok()?;
    let obj = v.as_object()?;
    let level = obj
        .get("level")
        .and_then(Value::as_str)
        .and_then(Level::from_name)
        .unwrap_or(Level::Info);
    let time = obj
        .get("time")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    Some(Record {
        time,
        level,
        target: obj.get("target").and_then(Value::as_str).unwrap_or("").to_string(),
        message: obj.get("msg").and_then(Value::as_str).unwrap_or("").to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_level_and_message() {
        let r = parse_line(r#"{"level":"WARN","msg":"disk 91% full","target":"agent::disk"}"#).unwrap();
        assert_eq!(r.level, Level::Warn);
        assert_eq!(r.message, "disk 91% full");
    }

    #[test]
    fn skips_non_json() {
        assert!(parse_line("plain text").is_none());
    }

    #[test]
    fn parses_time() {
        let r = parse_line(r#"{"time":"2025-05-01T10:00:00Z","msg":"x"}"#).unwrap();
        assert_eq!(r.time.unwrap().to_rfc3339(), "2025-05-01T10:00:00+00:00");
    }
}
''',
        "src/filter.rs": '''use anyhow::{anyhow, Result};

use crate::parse::{Level, Record};

/// Which records to show.
#[derive(Debug)]
pub struct Filter {
    min_level: Level,
    target: Option<String>,
}

impl Filter {
    pub fn new(level: &str, target: Option<&str>) -> Result<Filter> {
        let min_level = Level::from_name(level).ok_or_else(|| anyhow!("unknown level {level}"))?;
        Ok(Filter {
            min_level,
            target: target.map(str::to_string),
        })
    }

    pub fn accepts(&self, record: &Record) -> bool {
        if record.level < self.min_level {
            return false;
        }
        match &self.target {
            Some(prefix) => record.target.starts_with(prefix.as_str()),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_line;

    #[test]
    fn level_threshold() {
        let f = Filter::new("warn", None).unwrap();
        assert!(!f.accepts(&parse_line(r#"{"level":"info","msg":"a"}"#).unwrap()));
        assert!(f.accepts(&parse_line(r#"{"level":"error","msg":"b"}"#).unwrap()));
    }

    #[test]
    fn target_prefix() {
        let f = Filter::new("info", Some("db")).unwrap();
        assert!(f.accepts(&parse_line(r#"{"msg":"a","target":"db::pool"}"#).unwrap()));
        assert!(!f.accepts(&parse_line(r#"{"msg":"a","target":"http"}"#).unwrap()));
    }
}
''',
        "src/output.rs": '''use crate::parse::{Level, Record};

fn level_tag(level: Level) -> &'static str {
    match level {
        Level::Trace => "TRACE",
        Level::Debug => "DEBUG",
        Level::Info => " INFO",
        Level::Warn => " WARN",
        Level::Error => "ERROR",
    }
}

/// One line: time (or dashes), level, target, message.
pub fn format(record: &Record) -> String {
    let time = record
        .time
        .map(|t| t.format("%H:%M:%S%.3f").to_string())
        .unwrap_or_else(|| "------------".to_string());
    format!("{time} {} {}: {}", level_tag(record.level), record.target, record.message)
}
''',
        ".gitignore": "/target\n",
        "README.md": '''# logtail

`kubectl logs … | logtail --level warn --target db` shows the JSON log lines you care about.
''',
    }


def dash():
    """TypeScript: a small dashboard front end with an API client."""
    return {
        "package.json": '''{
  "name": "ops-dash",
  "version": "1.9.0",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "tsc -p tsconfig.json",
    "typecheck": "tsc --noEmit",
    "test": "vitest run",
    "lint": "eslint src"
  },
  "devDependencies": {
    "@types/node": "^20.12.7",
    "eslint": "^8.57.0",
    "typescript": "^5.4.5",
    "vitest": "^1.6.0"
  }
}
''',
        "tsconfig.json": '''{
  "compilerOptions": {
    "target": "ES2022",
    "module": "ESNext",
    "moduleResolution": "Bundler",
    "strict": true,
    "outDir": "dist",
    "skipLibCheck": true
  },
  "include": ["src"]
}
''',
        "src/api/client.ts": '''export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

export class ApiClient {
  constructor(private baseUrl: string, private token: string, private fetchImpl: typeof fetch = fetch) {}

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.fetchImpl(`${this.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        "content-type": "application/json",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) {
      throw new ApiError(res.status, `${method} ${path}: ${res.status}`);
    }
    return (await res.json()) as T;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>("POST", path, body);
  }

  /** One page of a cursor-paginated collection. */
  list<T>(path: string, cursor?: string): Promise<Page<T>> {
    const q = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
    return this.request<Page<T>>("GET", `${path}${q}`);
  }
}
''',
        "src/api/users.ts": '''import { ApiClient } from "./client";

export interface User {
  id: string;
  email: string;
  name: string;
  role: "admin" | "operator" | "viewer";
  lastSeen: string | null;
}

export async function getUser(api: ApiClient, id: string): Promise<User> {
  return api.get<User>(`/users/${id}`);
}

export async function inviteUser(api: ApiClient, email: string, role: User["role"]): Promise<User> {
  return api.post<User>("/users/invitations", { email, role });
}
''',
        "src/api/users.test.ts": '''import { describe, expect, it, vi } from "vitest";
import { ApiClient } from "./client";
import { getUser, inviteUser } from "./users";

function fakeFetch(body: unknown, status = 200) {
  return vi.fn(async () => new Response(JSON.stringify(body), { status }));
}

describe("users", () => {
  it("gets a user", async () => {
    const f = fakeFetch({ id: "u1", email: "a@x.io", name: "A", role: "viewer", lastSeen: null });
    const api = new ApiClient("https://api.test", "t", f as unknown as typeof fetch);
    expect((await getUser(api, "u1")).email).toBe("a@x.io");
  });

  it("invites a user", async () => {
    const f = fakeFetch({ id: "u2", email: "b@x.io", name: "", role: "operator", lastSeen: null });
    const api = new ApiClient("https://api.test", "t", f as unknown as typeof fetch);
    await inviteUser(api, "b@x.io", "operator");
    expect(f).toHaveBeenCalledWith("https://api.test/users/invitations", expect.objectContaining({ method: "POST" }));
  });
});
''',
        "src/utils/format.ts": '''/** "3 minutes ago", "2 days ago"; `now` is injectable for tests. */
export function relativeTime(iso: string, now: Date = new Date()): string {
  const seconds = Math.round((now.getTime() - new Date(iso).getTime()) / 1000);
  if (seconds < 60) return "just now";
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} minute${minutes === 1 ? "" : "s"} ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} hour${hours === 1 ? "" : "s"} ago`;
  const days = Math.floor(hours / 24);
  return `${days} day${days === 1 ? "" : "s"} ago`;
}

export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}
''',
        "src/utils/format.test.ts": '''import { describe, expect, it } from "vitest";
import { bytes, relativeTime } from "./format";

const now = new Date("2025-06-01T12:00:00Z");

describe("relativeTime", () => {
  it("says just now under a minute", () => {
    expect(relativeTime("2025-06-01T11:59:30Z", now)).toBe("just now");
  });
  it("counts minutes", () => {
    expect(relativeTime("2025-06-01T11:57:00Z", now)).toBe("3 minutes ago");
  });
  it("counts days", () => {
    expect(relativeTime("2025-05-30T12:00:00Z", now)).toBe("2 days ago");
  });
});

describe("bytes", () => {
  it("formats binary units", () => {
    expect(bytes(512)).toBe("512 B");
    expect(bytes(1536)).toBe("1.5 KiB");
  });
});
''',
        ".gitignore": "node_modules/\ndist/\ncoverage/\n.env\n",
    }


def shortlink():
    """Go: a URL shortener service."""
    return {
        "go.mod": '''module github.com/acme/shortlink

go 1.22

require github.com/mattn/go-sqlite3 v1.14.22
''',
        "cmd/shortlink/main.go": '''package main

import (
	"database/sql"
	"log"
	"net/http"
	"os"

	_ "github.com/mattn/go-sqlite3"

	"github.com/acme/shortlink/internal/httpapi"
	"github.com/acme/shortlink/internal/store"
)

func main() {
	dsn := os.Getenv("SHORTLINK_DB")
	if dsn == "" {
		dsn = "shortlink.db"
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		log.Fatal(err)
	}
	s := store.New(db)
	addr := ":8080"
	log.Printf("listening on %s", addr)
	log.Fatal(http.ListenAndServe(addr, httpapi.New(s)))
}
''',
        "internal/store/store.go": '''package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ErrNotFound is returned when no link has the code.
var ErrNotFound = errors.New("link not found")

// Link is one short link.
type Link struct {
	Code      string
	Target    string
	CreatedAt time.Time
	Hits      int64
}

// Store keeps links in SQL.
type Store struct {
	db *sql.DB
}

// New wraps an open database.
func New(db *sql.DB) *Store { return &Store{db: db} }

// Create inserts a link.
func (s *Store) Create(ctx context.Context, l Link) error {
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO links (code, target, created_at, hits) VALUES (?, ?, ?, 0)`,
		l.Code, l.Target, l.CreatedAt.UTC())
	return err
}

// Lookup returns the link with the code.
func (s *Store) Lookup(ctx context.Context, code string) (Link, error) {
	var l Link
	err := s.db.QueryRowContext(ctx,
		`SELECT code, target, created_at, hits FROM links WHERE code = ?`, code).
		Scan(&l.Code, &l.Target, &l.CreatedAt, &l.Hits)
	if errors.Is(err, sql.ErrNoRows) {
		return Link{}, ErrNotFound
	}
	return l, err
}

// Hit counts one redirect.
func (s *Store) Hit(ctx context.Context, code string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE links SET hits = hits + 1 WHERE code = ?`, code)
	return err
}
''',
        "internal/store/store_test.go": '''package store

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

func open(t *testing.T) *Store {
	t.Helper()
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE links (code TEXT PRIMARY KEY, target TEXT NOT NULL, created_at TIMESTAMP NOT NULL, hits INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return New(db)
}

func TestCreateLookup(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Create(ctx, Link{Code: "abc", Target: "https://example.com", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	l, err := s.Lookup(ctx, "abc")
	if err != nil || l.Target != "https://example.com" {
		t.Fatalf("got %+v, %v", l, err)
	}
}

func TestLookupMissing(t *testing.T) {
	if _, err := open(t).Lookup(context.Background(), "nope"); err != ErrNotFound {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}
''',
        "internal/httpapi/handler.go": '''package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/acme/shortlink/internal/store"
)

// Handler serves redirects and the JSON API.
type Handler struct {
	store *store.Store
	mux   *http.ServeMux
}

// New builds the routes.
func New(s *store.Store) *Handler {
	h := &Handler{store: s, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{code}", h.redirect)
	h.mux.HandleFunc("GET /api/links/{code}", h.info)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) redirect(w http.ResponseWriter, r *http.Request) {
	code := strings.TrimSpace(r.PathValue("code"))
	l, err := h.store.Lookup(r.Context(), code)
	if errors.Is(err, store.ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	_ = h.store.Hit(r.Context(), code)
	http.Redirect(w, r, l.Target, http.StatusFound)
}

func (h *Handler) info(w http.ResponseWriter, r *http.Request) {
	l, err := h.store.Lookup(r.Context(), r.PathValue("code"))
	if errors.Is(err, store.ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"code": l.Code, "target": l.Target, "hits": l.Hits})
}
''',
        "internal/httpapi/handler_test.go": '''package httpapi

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/acme/shortlink/internal/store"
)

func newHandler(t *testing.T) *Handler {
	t.Helper()
	db, _ := sql.Open("sqlite3", ":memory:")
	db.Exec(`CREATE TABLE links (code TEXT PRIMARY KEY, target TEXT NOT NULL, created_at TIMESTAMP NOT NULL, hits INTEGER NOT NULL)`)
	s := store.New(db)
	s.Create(context.Background(), store.Link{Code: "go", Target: "https://go.dev", CreatedAt: time.Now()})
	return New(s)
}

func TestRedirect(t *testing.T) {
	rec := httptest.NewRecorder()
	newHandler(t).ServeHTTP(rec, httptest.NewRequest("GET", "/go", nil))
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "https://go.dev" {
		t.Fatalf("got %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

func TestRedirectMissing(t *testing.T) {
	rec := httptest.NewRecorder()
	newHandler(t).ServeHTTP(rec, httptest.NewRequest("GET", "/nope", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("got %d", rec.Code)
	}
}
''',
        "migrations/001_links.sql": '''CREATE TABLE links (
    code TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0
);
''',
        "Makefile": '''.PHONY: test build
test:
\tgo test ./...
build:
\tgo build -o bin/shortlink ./cmd/shortlink
''',
        ".gitignore": "bin/\n*.db\n",
    }


def opsbox():
    """Shell: deployment and backup scripts for a small service."""
    return {
        "scripts/lib.sh": '''#!/usr/bin/env bash
# Shared helpers for the ops scripts.
set -euo pipefail

log() { printf '%s %s\\n' "$(date -u +%FT%TZ)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

require() {
  for cmd in "$@"; do
    command -v "$cmd" >/dev/null 2>&1 || die "missing command: $cmd"
  done
}
''',
        "scripts/backup.sh": '''#!/usr/bin/env bash
# Dump the app database to $BACKUP_DIR as a gzipped SQL file.
source "$(dirname "$0")/lib.sh"

BACKUP_DIR=${BACKUP_DIR:-/var/backups/app}
DB_NAME=${DB_NAME:-app}

require pg_dump gzip
mkdir -p "$BACKUP_DIR"
stamp=$(date -u +%Y%m%d-%H%M%S)
file="$BACKUP_DIR/$DB_NAME-$stamp.sql.gz"
log "dumping $DB_NAME to $file"
pg_dump --no-owner "$DB_NAME" | gzip -9 > "$file"
log "done: $(du -h "$file" | cut -f1)"
''',
        "scripts/deploy.sh": '''#!/usr/bin/env bash
# Build the image, push it and roll the service.
source "$(dirname "$0")/lib.sh"

IMAGE=${IMAGE:-registry.internal/app}
TAG=${TAG:-$(git rev-parse --short HEAD)}

require docker git
log "building $IMAGE:$TAG"
docker build -t "$IMAGE:$TAG" .
docker push "$IMAGE:$TAG"
log "rolling app to $TAG"
docker service update --image "$IMAGE:$TAG" app_web
''',
        "docker-compose.yml": '''services:
  db:
    image: postgres:16
    environment:
      POSTGRES_DB: app
      POSTGRES_USER: app
      POSTGRES_PASSWORD: app
    volumes:
      - pgdata:/var/lib/postgresql/data
    ports:
      - "5432:5432"
  web:
    build: .
    depends_on: [db]
    environment:
      DATABASE_URL: postgres://app:app@db:5432/app
    ports:
      - "8000:8000"
volumes:
  pgdata:
''',
        "Makefile": '''.PHONY: backup deploy lint
backup:
\t./scripts/backup.sh
deploy:
\t./scripts/deploy.sh
lint:
\tshellcheck scripts/*.sh
''',
        "README.md": '''# opsbox

Scripts that deploy and back up the app. `make lint` runs shellcheck.
''',
        ".gitignore": ".env\n*.sql.gz\n",
    }
