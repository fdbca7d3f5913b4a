{{if .Postgres}}
-- An execute marks its prepared transaction executed, with its receipt, in the transaction's
-- body, as it writes its other rows, so the COMMIT no longer rewrites that row (and its four
-- indexes) under the offset lock. The receipt stored there lacks the log index, which the
-- COMMIT assigns: a read of a stored receipt adds it from the update's row (updates.log_index).
-- The COMMIT still tells an execute's session its index with a notice; log_pending.prepared
-- now only says that the update is an execute.
CREATE OR REPLACE FUNCTION log_append(uid TEXT, o BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    p      log_pending;
    n      BIGINT;
    fr     BYTEA;
    entry  BYTEA;
    h      BYTEA;
    m      BIGINT;
    hashes BYTEA;
BEGIN
    DELETE FROM log_pending WHERE update_id = uid RETURNING * INTO p;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT size, frontier INTO n, fr FROM log_head WHERE id = 1;
    entry := p.entry_head || convert_to(o::text, 'UTF8') || p.entry_tail;
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
    IF p.prepared IS NOT NULL THEN
        RAISE NOTICE USING MESSAGE = 'transparency log index', DETAIL = n::text || ' ' || uid;
    END IF;
    RETURN n;
END
$$;
{{else}}
-- SQLite appends before COMMIT and knows the index as it writes the receipt: nothing changes.
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
ALTER TABLE log_pending DROP COLUMN receipt_head, DROP COLUMN receipt_tail, DROP COLUMN executed_at;
{{else}}
SELECT 1;
{{end}}
