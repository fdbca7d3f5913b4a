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
DROP FUNCTION log_append(TEXT, BIGINT);
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
        RAISE NOTICE USING MESSAGE = 'transparency log index', DETAIL = n::text || ' ' || uid;
    END IF;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
ALTER TABLE log_entries ADD CONSTRAINT log_entries_update_id_key UNIQUE (update_id);
{{else}}
CREATE TABLE log_entries_by_index (
    log_index INTEGER PRIMARY KEY,
    update_id TEXT NOT NULL UNIQUE,
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

ALTER TABLE updates DROP COLUMN log_index;
