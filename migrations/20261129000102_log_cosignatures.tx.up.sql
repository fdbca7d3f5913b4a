-- The latest cosignature each configured witness gave the service's own log: the tree it
-- cosigned (size, root in base64) and its signature line, served with that tree's checkpoint
-- (store/log_witnesses.go). A row only moves to a larger tree.
CREATE TABLE log_cosignatures (
    witness TEXT PRIMARY KEY,
    size BIGINT NOT NULL,
    root TEXT NOT NULL,
    line TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
