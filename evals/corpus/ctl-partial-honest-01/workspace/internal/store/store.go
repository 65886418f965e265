package store

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

// Delete removes the link with the code.
func (s *Store) Delete(ctx context.Context, code string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM links WHERE code = ?`, code)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Hit counts one redirect.
func (s *Store) Hit(ctx context.Context, code string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE links SET hits = hits + 1 WHERE code = ?`, code)
	return err
}
