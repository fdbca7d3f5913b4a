-- An update's log index is a column of the update itself, written where its entry is
-- appended, so a read that shows it (a receipt read back, a history, the console's updates)
-- reads the update's own row and log_entries needs no index by update id: an append writes
-- one index fewer (on SQLite one page fewer per commit). Nothing else reads an entry by its
-- update: the log is read by index.
ALTER TABLE updates ADD COLUMN log_index BIGINT;

--bun:split

UPDATE updates SET log_index = (SELECT e.log_index FROM log_entries AS e WHERE e.update_id = updates.update_id);

--bun:split

{{if .Postgres}}
ALTER TABLE log_entries DROP CONSTRAINT log_entries_update_id_key;
{{else}}
-- SQLite keeps a UNIQUE column's index for as long as the table: rebuilt without it.
CREATE TABLE log_entries_by_index (
    log_index INTEGER PRIMARY KEY,
    update_id TEXT NOT NULL,
    entry     BLOB NOT NULL
);
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
INSERT INTO log_entries_by_index (log_index, update_id, entry) SELECT log_index, update_id, entry FROM log_entries;
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
ALTER TABLE log_entries_by_index RENAME TO log_entries;
{{end}}

--bun:split

{{if .Postgres}}
-- log_append as before, answering the index it appended at (NULL for an update with no
-- pending entry), and writing the stored hashes the entry adds with one statement.
DROP FUNCTION log_append(TEXT, BIGINT);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
CREATE FUNCTION log_append(uid TEXT, o BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    p      log_pending;
    n      BIGINT;
    fr     BYTEA;
    entry  BYTEA;
    h      BYTEA;
    base   BIGINT := 0; -- the stored-hash index of entry n's leaf: n + n/2 + n/4 + ...
    m      BIGINT;
    idx    BIGINT[];
    hashes BYTEA[];
BEGIN
    DELETE FROM log_pending WHERE update_id = uid RETURNING * INTO p;
    IF NOT FOUND THEN
        RETURN NULL;
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
    idx := ARRAY[base];
    hashes := ARRAY[h];
    m := n;
    WHILE m & 1 = 1 LOOP -- each trailing one of n: a complete subtree the new leaf completes
        h := sha256('\x01'::bytea || substring(fr FROM length(fr) - 31) || h);
        fr := substring(fr FOR length(fr) - 32);
        idx := idx || (base + cardinality(idx));
        hashes := hashes || h;
        m := m >> 1;
    END LOOP;
    INSERT INTO log_hashes (hash_index, hash) SELECT * FROM unnest(idx, hashes);
    UPDATE log_head SET size = n + 1, frontier = fr || h WHERE id = 1;
    IF p.prepared IS NOT NULL THEN
        UPDATE prepared_txs
        SET update_id = uid, result = p.receipt_head || convert_to(n::text, 'UTF8') || p.receipt_tail, executed_at = p.executed_at
        WHERE hash = p.prepared;
        RAISE NOTICE USING MESSAGE = 'transparency log index', DETAIL = n::text || ' ' || uid;
    END IF;
    RETURN n;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- The update's offset and log index are written with one UPDATE of its row.
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
    n BIGINT;
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    o := nextval('ledger_offsets');
    n := log_append(NEW.update_id, o);
    UPDATE updates SET ledger_offset = o, log_index = n WHERE update_id = NEW.update_id;
    UPDATE nft_activity SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE swap_intent_views SET closed_offset = o WHERE closed_update = NEW.update_id;
    RETURN NULL;
END
$$;
{{else}}
SELECT 1;
{{end}}
