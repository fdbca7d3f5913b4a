{{if .Postgres}}
-- The code before builds every entry in its COMMIT: entries still queued would never be built.
-- Starting marketd once builds them (its integration); refuse until then.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM log_queue) OR (SELECT next FROM log_sequence) <> (SELECT size FROM log_head) THEN
        RAISE EXCEPTION 'the transparency log has queued entries: start marketd once to build them, then roll back';
    END IF;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- log_append as the log_pending_in_settings migration left it.
CREATE FUNCTION log_append(uid TEXT, o BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    k      INTEGER := COALESCE(NULLIF(current_setting('marketd.log_next', true), ''), '0')::INTEGER;
    v      TEXT := current_setting('marketd.log_' || k, true);
    n      BIGINT;
    fr     BYTEA;
    entry  BYTEA;
    h      BYTEA;
    m      BIGINT;
    hashes BYTEA;
BEGIN
    IF v IS NULL OR v = '' THEN
        RETURN NULL; -- not logged: an update the store appends itself (from before the log)
    END IF;
    IF split_part(v, ' ', 1) <> uid THEN
        RAISE EXCEPTION 'transparency log: the pending entry % is update %, the commit appends %', k, split_part(v, ' ', 1), uid;
    END IF;
    PERFORM set_config('marketd.log_next', (k + 1)::text, true);
    entry := convert_to('{"updateId":"' || uid || '","offset":' || o::text, 'UTF8') || decode(split_part(v, ' ', 2), 'base64');
    SELECT size, frontier INTO n, fr FROM log_head WHERE id = 1;
    h := sha256('\x00'::bytea || entry);
    hashes := h;
    m := n;
    WHILE m & 1 = 1 LOOP -- each trailing one of n: a complete subtree the new leaf completes
        h := sha256('\x01'::bytea || substring(fr FROM length(fr) - 31) || h);
        fr := substring(fr FOR length(fr) - 32);
        hashes := hashes || h;
        m := m >> 1;
    END LOOP;
    INSERT INTO log_entries (log_index, update_id, entry, hashes) VALUES (n, uid, entry, hashes);
    UPDATE log_head SET size = n + 1, frontier = fr || h WHERE id = 1;
    IF k = 0 THEN
        -- The transaction's first entry: the session learns its index with the COMMIT's answer,
        -- in which the server reports a changed application_name (at most 63 bytes: the name
        -- before keeps its first 29).
        PERFORM set_config('application_name',
            left(split_part(current_setting('application_name'), ' #log ', 1), 29) || ' #log ' || n::text || ' ' || left(uid, 8), false);
    END IF;
    RETURN n;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- assign_ledger_offset as the log_index_on_updates migration left it.
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

--bun:split

{{if .Postgres}}
DROP TABLE log_sequence;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
DROP TABLE log_queue;
{{else}}
SELECT 1;
{{end}}
