package store

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
