-- What this service, as a witness of other logs, last cosigned for each: the tree's size and
-- root hash (base64), and the checkpoint itself as it was submitted. A row moves forward only
-- by a compare-and-swap on size and root (store/witness.go).
CREATE TABLE witness_logs (
    origin TEXT PRIMARY KEY,
    size BIGINT NOT NULL,
    root TEXT NOT NULL,
    checkpoint TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
