#!/usr/bin/env bash
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
