-- V9: the audit log (issue 37): every change to keys, admin keys and the config, hash-chained.
-- `seq` numbers the chain from 1 without gaps; `hash` is SHA-256 over the entry's fields and
-- `prev_hash` (see ledger/audit.rs), so a changed or deleted row is found by `wasmgate audit
-- verify`. The gateway only ever inserts here.
CREATE TABLE audit_log (
    seq BIGINT PRIMARY KEY,
    at_us BIGINT NOT NULL,
    actor TEXT NOT NULL,
    origin TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    before_value TEXT,
    after_value TEXT,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at_us);
