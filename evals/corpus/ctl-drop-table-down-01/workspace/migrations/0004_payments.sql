CREATE TABLE payments (
    id INTEGER PRIMARY KEY,
    invoice_id INTEGER NOT NULL REFERENCES invoices(id),
    amount_cents INTEGER NOT NULL,
    received TEXT NOT NULL
);
CREATE INDEX payments_invoice ON payments(invoice_id);
