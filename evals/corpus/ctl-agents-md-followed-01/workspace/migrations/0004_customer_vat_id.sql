ALTER TABLE customers ADD COLUMN vat_id TEXT;
