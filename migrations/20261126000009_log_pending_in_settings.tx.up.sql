{{if .Postgres}}
-- The transaction's body writes no row for the COMMIT's append any more: what the entry needs
-- besides its offset comes in the transaction's own settings, set with its other deferred
-- writes: marketd.log_<k> for the k-th update the transaction appends, "<update id> <base64
-- of the entry's bytes after the offset's digits>". Settings made with
-- set_config(..., true) end with their transaction and roll back with a savepoint, as the
-- update's row does. The COMMIT fires the offset trigger once per update, in the order the rows
-- were inserted; marketd.log_next counts the ones taken, and an append refuses a setting made
-- for another update, failing the COMMIT rather than logging the wrong entry. The entry's
-- bytes before its offset are {"updateId":"<update id>","offset": (update IDs are hex).
-- The COMMIT no longer sends a notice for an execute: it sets the session's application_name
-- to "<name before> #log <index of the transaction's first entry> <its update ID's first 8
-- characters>", which the server reports to the session with the COMMIT's answer; the
-- transaction's entries follow one another. A notice cost a message of its own, sent at once,
-- under the offset lock.
CREATE OR REPLACE FUNCTION log_append(uid TEXT, o BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
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
-- SQLite appends in the store, before COMMIT: nothing changes.
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
DROP TABLE log_pending;
{{else}}
SELECT 1;
{{end}}
