#!/usr/bin/env bash
# Apply every migration in order (no bookkeeping yet: each file must be idempotent).
source "$(dirname "$0")/lib.sh"
require psql
for f in "$(dirname "$0")"/../migrations/*.sql; do
  log "applying $(basename "$f")"
  psql "${DATABASE_URL:?set DATABASE_URL}" -v ON_ERROR_STOP=1 -f "$f"
done
