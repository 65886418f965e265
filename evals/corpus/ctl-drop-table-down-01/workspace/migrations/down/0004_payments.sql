DROP INDEX IF EXISTS payments_invoice;
DROP TABLE IF EXISTS payments;
