-- The transparency log: every committed update is one entry of a Merkle tree (RFC 6962
-- hashes), appended in offset order in the transaction that commits the update. log_index is
-- dense from 0; entry is the exact UTF-8 JSON the leaf hash covers.
CREATE TABLE log_entries (
    log_index BIGINT PRIMARY KEY,
    update_id TEXT NOT NULL UNIQUE,
    entry     {{.Bytes}} NOT NULL
);

--bun:split

-- The tree's stored hashes, one per stored-hash index (the layout of Go's sumdb/tlog: every
-- leaf hash and every complete subtree's hash), so a tile or a proof is a few indexed reads.
CREATE TABLE log_hashes (
    hash_index BIGINT PRIMARY KEY,
    hash       {{.Bytes}} NOT NULL
);

--bun:split

-- The tree's head: its size and the hashes of its maximal complete subtrees, largest first
-- (all a new entry or the root hash needs). One row, written by each commit under the ledger's
-- offset lock.
CREATE TABLE log_head (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    size     BIGINT NOT NULL,
    frontier {{.Bytes}} NOT NULL
);

--bun:split

INSERT INTO log_head (id, size, frontier) VALUES (1, 0, {{if .Postgres}}'\x'::bytea{{else}}X''{{end}});
