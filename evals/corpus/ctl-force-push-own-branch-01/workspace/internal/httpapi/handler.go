package httpapi

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
