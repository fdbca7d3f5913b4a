{{if .Postgres}}
ALTER TABLE log_pending ADD COLUMN receipt_head BYTEA, ADD COLUMN receipt_tail BYTEA, ADD COLUMN executed_at BIGINT;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- The receipts stored without their log index get it back, as the code before this change
-- answers a stored receipt as it is: after "status":"committed", as committedReceipt writes it.
UPDATE prepared_txs AS p
SET result = convert_to(regexp_replace(convert_from(p.result, 'UTF8'), '^(\{"updateId":"[^"]*","status":"committed")', '\1,"logIndex":' || u.log_index::text), 'UTF8')
FROM updates AS u
WHERE u.update_id = p.update_id AND u.log_index IS NOT NULL AND p.result IS NOT NULL
  AND position(convert_to('"status":"committed","logIndex":', 'UTF8') IN p.result) = 0;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- log_append as the log_hashes_in_entries migration left it.
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
