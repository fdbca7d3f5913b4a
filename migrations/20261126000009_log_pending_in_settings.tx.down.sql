{{if .Postgres}}
CREATE UNLOGGED TABLE log_pending (
    update_id  TEXT PRIMARY KEY,
    entry_head BYTEA NOT NULL,
    entry_tail BYTEA NOT NULL,
    prepared   BYTEA
);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- log_append as the receipt_in_the_body migration left it.
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
SELECT 1;
{{end}}
