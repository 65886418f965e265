package httpapi

import (
	"context"
	"encoding/json"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
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

func TestInfoJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	newHandler(t).ServeHTTP(rec, httptest.NewRequest("GET", "/api/links/go", nil))
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["code"] != "go" || got["hits"] != float64(0) {
		t.Fatalf("got %v", got)
	}
	ca, _ := got["created_at"].(string)
	if _, err := time.Parse(time.RFC3339, ca); err != nil || !strings.HasSuffix(ca, "Z") {
		t.Fatalf("created_at = %q, want RFC 3339 in UTC", ca)
	}
}

func TestRedirectMissing(t *testing.T) {
	rec := httptest.NewRecorder()
	newHandler(t).ServeHTTP(rec, httptest.NewRequest("GET", "/nope", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("got %d", rec.Code)
	}
}
