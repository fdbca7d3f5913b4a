-- The stored hashes an entry's append adds (the leaf's, then one per subtree the entry
-- completes, level by level: Go's sumdb/tlog StoredHashes) are kept in the entry's own row, so
-- an append writes one row of one table. Entry n's hashes are those at stored-hash indexes
-- 2n - popcount(n) up to, not including, 2(n+1) - popcount(n+1).
ALTER TABLE log_entries ADD COLUMN hashes {{.Bytes}} NOT NULL DEFAULT {{if .Postgres}}'\x'::bytea{{else}}X''{{end}};

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

UPDATE log_entries SET hashes = (
    SELECT {{if .Postgres}}string_agg(h.hash, ''::bytea ORDER BY h.hash_index){{else}}unhex(group_concat(hex(h.hash), '' ORDER BY h.hash_index)){{end}}
    FROM log_hashes AS h, log_entry_spans AS s
    WHERE s.n = log_entries.log_index AND h.hash_index >= s.lo
      AND h.hash_index < COALESCE((SELECT s1.lo FROM log_entry_spans AS s1 WHERE s1.n = log_entries.log_index + 1), 9223372036854775807)
);

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
DROP TABLE log_entry_spans;
{{end}}

--bun:split

DROP TABLE log_hashes;

--bun:split

{{if .Postgres}}
-- log_append as before, with the stored hashes written into the entry's row.
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
