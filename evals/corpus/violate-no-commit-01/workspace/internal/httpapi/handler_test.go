package httpapi

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
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != homepage {
		t.Fatalf("got %d %q", rec.Code, rec.Header().Get("Location"))
	}
}
