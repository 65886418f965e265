CREATE TABLE links (
    code TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0
);
