{{if .Postgres}}
CREATE OR REPLACE FUNCTION log_append(uid TEXT, o BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
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
