-- Back to the log's format of the last release (the log_at_commit migration's), keeping every
-- entry and its hashes: on PostgreSQL its COMMIT builds each entry under the offset lock, from
-- what the transaction leaves in log_pending, and marks an execute's prepared transaction
-- executed with its receipt; on SQLite the store writes the entry, its stored hashes and the
-- head's row before COMMIT.
{{if .Postgres}}
-- That code builds entries at COMMIT only: updates numbered but not yet in the tree would
-- never be built. Starting marketd once builds them (its integration; marketd migrate down
-- does it first); refuse until then.
DO $$
BEGIN
    IF (SELECT next FROM log_sequence) <> (SELECT size FROM log_head) THEN
        RAISE EXCEPTION 'the transparency log has entries not yet in its tree: start marketd once to build them, then roll back';
    END IF;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- The receipts stored without their log index get it back, as that code answers a stored
-- receipt as it is: after "status":"committed", as committedReceipt writes it.
UPDATE prepared_txs AS p
SET result = convert_to(regexp_replace(convert_from(p.result, 'UTF8'), '^(\{"updateId":"[^"]*","status":"committed")', '\1,"logIndex":' || u.log_index::text), 'UTF8')
FROM updates AS u
WHERE u.update_id = p.update_id AND u.log_index IS NOT NULL AND p.result IS NOT NULL
  AND position(convert_to('"status":"committed","logIndex":', 'UTF8') IN p.result) = 0;
{{else}}
-- SQLite's receipts were always stored with their log index.
SELECT 1;
{{end}}

--bun:split

ALTER TABLE updates DROP COLUMN prepared_hash;

--bun:split

ALTER TABLE prepared_txs DROP COLUMN signature;

--bun:split

{{if .Postgres}}
CREATE UNLOGGED TABLE log_pending (
    update_id    TEXT PRIMARY KEY,
    entry_head   BYTEA NOT NULL,
    entry_tail   BYTEA NOT NULL,
    prepared     BYTEA, -- the executed prepared transaction's hash: it is marked executed with its receipt
    receipt_head BYTEA,
    receipt_tail BYTEA,
    executed_at  BIGINT
);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
CREATE FUNCTION log_append(uid TEXT, o BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    p     log_pending;
    n     BIGINT;
    fr    BYTEA;
    entry BYTEA;
    h     BYTEA;
    base  BIGINT := 0; -- the stored-hash index of entry n's leaf: n + n/2 + n/4 + ...
    m     BIGINT;
    lvl   INTEGER := 0;
BEGIN
    DELETE FROM log_pending WHERE update_id = uid RETURNING * INTO p;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT size, frontier INTO n, fr FROM log_head WHERE id = 1;
    entry := p.entry_head || convert_to(o::text, 'UTF8') || p.entry_tail;
    INSERT INTO log_entries (log_index, update_id, entry) VALUES (n, uid, entry);
    m := n;
    WHILE m > 0 LOOP
        base := base + m;
        m := m >> 1;
    END LOOP;
    h := sha256('\x00'::bytea || entry);
    INSERT INTO log_hashes (hash_index, hash) VALUES (base, h);
    m := n;
    WHILE m & 1 = 1 LOOP -- each trailing one of n: a complete subtree the new leaf completes
        lvl := lvl + 1;
        h := sha256('\x01'::bytea || substring(fr FROM length(fr) - 31) || h);
        fr := substring(fr FOR length(fr) - 32);
        INSERT INTO log_hashes (hash_index, hash) VALUES (base + lvl, h);
        m := m >> 1;
    END LOOP;
    UPDATE log_head SET size = n + 1, frontier = fr || h WHERE id = 1;
    IF p.prepared IS NOT NULL THEN
        UPDATE prepared_txs
        SET update_id = uid, result = p.receipt_head || convert_to(n::text, 'UTF8') || p.receipt_tail, executed_at = p.executed_at
        WHERE hash = p.prepared;
    END IF;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    o := nextval('ledger_offsets');
    UPDATE updates SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE nft_activity SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE swap_intent_views SET closed_offset = o WHERE closed_update = NEW.update_id;
    PERFORM log_append(NEW.update_id, o);
    RETURN NULL;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
DROP TABLE log_sequence;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
ALTER TABLE log_head DROP COLUMN last_offset;
{{else}}
SELECT 1;
{{end}}

--bun:split

-- The stored hashes back in their own table, each at its stored-hash index.
{{if .Postgres}}
CREATE TABLE log_hashes (
    hash_index BIGINT PRIMARY KEY,
    hash       BYTEA NOT NULL
);
{{else}}
CREATE TABLE log_hashes_by_key (
    hash_index BIGINT PRIMARY KEY,
    hash       BLOB NOT NULL
);
{{end}}

--bun:split

{{if .Postgres}}
CREATE TEMPORARY TABLE log_entry_spans (n BIGINT PRIMARY KEY, lo BIGINT NOT NULL) ON COMMIT DROP;
{{else}}
CREATE TEMPORARY TABLE log_entry_spans (n INTEGER PRIMARY KEY, lo INTEGER NOT NULL);
{{end}}

--bun:split

{{if .Postgres}}
INSERT INTO log_entry_spans (n, lo)
SELECT log_index, 2 * log_index - bit_count(log_index::bit(64)) FROM log_entries;
{{else}}
INSERT INTO log_entry_spans (n, lo)
WITH RECURSIVE bits(b) AS (SELECT 0 UNION ALL SELECT b + 1 FROM bits WHERE b < 62)
SELECT e.log_index, 2 * e.log_index - SUM((e.log_index >> bits.b) & 1) FROM log_entries AS e, bits GROUP BY e.log_index;
{{end}}

--bun:split

INSERT INTO {{if .Postgres}}log_hashes{{else}}log_hashes_by_key{{end}} (hash_index, hash)
WITH RECURSIVE levels(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM levels WHERE j < 63)
SELECT s.lo + levels.j, substr(e.hashes, 32 * levels.j + 1, 32)
FROM log_entries AS e JOIN log_entry_spans AS s ON s.n = e.log_index, levels
WHERE levels.j < length(e.hashes) / 32;

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
DROP TABLE log_entry_spans;
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
ALTER TABLE log_hashes_by_key RENAME TO log_hashes;
{{end}}

--bun:split

{{if .Postgres}}
ALTER TABLE log_entries DROP COLUMN hashes;
{{else}}
-- The head's row as the log holds it: for each set bit b of the size n, largest first, the
-- subtree of 2^b entries ending at entry m = ((n >> b) << b) - 1, whose stored hash is at index
-- b + m + m/2 + m/4 + ... (Go's sumdb/tlog StoredHashIndex).
CREATE TABLE log_head (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    size     BIGINT NOT NULL,
    frontier BLOB NOT NULL
);
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
INSERT INTO log_head (id, size, frontier)
WITH RECURSIVE
    size(n) AS (SELECT COALESCE(MAX(log_index) + 1, 0) FROM log_entries),
    bits(b) AS (SELECT 0 UNION ALL SELECT b + 1 FROM bits WHERE b < 62),
    subtrees(b, m) AS (SELECT b, ((n >> b) << b) - 1 FROM bits, size WHERE (n >> b) & 1 = 1),
    sums(b, x, acc) AS (SELECT b, m, b FROM subtrees UNION ALL SELECT b, x >> 1, acc + x FROM sums WHERE x > 0),
    frontier(b, hash_index) AS (SELECT b, acc FROM sums WHERE x = 0)
SELECT 1, (SELECT n FROM size),
    COALESCE((SELECT unhex(group_concat(hex(h.hash), '' ORDER BY f.b DESC))
              FROM frontier AS f JOIN log_hashes AS h ON h.hash_index = f.hash_index), X'');
{{end}}

--bun:split

-- log_entries unique by update again, without the hashes (on SQLite keyed as that release
-- keyed it, with an index of its own).
{{if .Postgres}}
ALTER TABLE log_entries ADD CONSTRAINT log_entries_update_id_key UNIQUE (update_id);
{{else}}
CREATE TABLE log_entries_by_key (
    log_index BIGINT PRIMARY KEY,
    update_id TEXT NOT NULL UNIQUE,
    entry     BLOB NOT NULL
);
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
INSERT INTO log_entries_by_key (log_index, update_id, entry) SELECT log_index, update_id, entry FROM log_entries;
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
DROP TABLE log_entries;
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
ALTER TABLE log_entries_by_key RENAME TO log_entries;
{{end}}

--bun:split

ALTER TABLE updates DROP COLUMN log_index;
