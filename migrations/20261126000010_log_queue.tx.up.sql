{{if .Postgres}}
-- The COMMIT no longer builds the log's entries under the offset lock: it only numbers them.
-- An update's entry is made of what the transaction's body already knows (everything after
-- the offset: its kind, party, time, and what the party signed) and of what only the COMMIT
-- knows (its offset and its log index). The body writes the former to log_queue, one row per
-- update it logs, with its position among them; the COMMIT, under the offset lock, takes the
-- next index from log_sequence and writes offset and index on the update's row, as it writes
-- the offset. Both commit with the update, so an acknowledged update's entry (its bytes and
-- its place) is durable with it. The tree (the entry's bytes in log_entries, its hashes, the
-- head) is built from the queue afterwards, in index order, by whichever instance gets to it
-- first (the store's integration, under a lock of its own), which deletes the rows it built:
-- what it writes is determined by what committed, so an integration lost in a crash is
-- written again the same. The head's size is the integrated size; log_sequence.next the
-- number of entries the ledger has committed.
CREATE TABLE log_queue (
    update_id TEXT PRIMARY KEY,
    position  INTEGER NOT NULL, -- its place among the updates its transaction logs, from 0
    tail      BYTEA NOT NULL    -- the entry's bytes after the offset's digits
);
{{else}}
-- SQLite appends the whole entry in the transaction that commits the update: nothing changes.
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
CREATE TABLE log_sequence (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    next BIGINT NOT NULL
);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
INSERT INTO log_sequence (id, next) SELECT 1, size FROM log_head;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- Under the offset lock: the offset; for an update with a queued entry, the next log index,
-- written on the update's row with the offset. The transaction's first logged update (its
-- position 0) reports its index to the session in application_name, "<name before> #log
-- <index> <the update ID's first 8 characters>", which the server sends with the COMMIT's
-- answer; the transaction's later entries follow it. An update without a queued entry (the
-- store appends those committed before the log itself) gets no index here.
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
    n BIGINT;
    k INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    o := nextval('ledger_offsets');
    SELECT position INTO k FROM log_queue WHERE update_id = NEW.update_id;
    IF FOUND THEN
        UPDATE log_sequence SET next = next + 1 WHERE id = 1 RETURNING next - 1 INTO n;
        IF k = 0 THEN
            PERFORM set_config('application_name',
                left(split_part(current_setting('application_name'), ' #log ', 1), 29) || ' #log ' || n::text || ' ' || left(NEW.update_id, 8), false);
        END IF;
    END IF;
    UPDATE updates SET ledger_offset = o, log_index = n WHERE update_id = NEW.update_id;
    UPDATE nft_activity SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE swap_intent_views SET closed_offset = o WHERE closed_update = NEW.update_id;
    RETURN NULL;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
DROP FUNCTION log_append(TEXT, BIGINT);
{{else}}
SELECT 1;
{{end}}
