{{if .Postgres}}
CREATE TABLE log_hashes (
    hash_index BIGINT PRIMARY KEY,
    hash       BYTEA NOT NULL
);
{{else}}
CREATE TABLE log_hashes (
    hash_index INTEGER PRIMARY KEY,
    hash       BLOB NOT NULL
);
{{end}}

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

INSERT INTO log_hashes (hash_index, hash)
WITH RECURSIVE levels(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM levels WHERE j < 63)
SELECT s.lo + levels.j, substr(e.hashes, 32 * levels.j + 1, 32)
FROM log_entries AS e JOIN log_entry_spans AS s ON s.n = e.log_index, levels
WHERE levels.j < length(e.hashes) / 32;

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
DROP TABLE log_entry_spans;
{{end}}

--bun:split

ALTER TABLE log_entries DROP COLUMN hashes;

--bun:split

{{if .Postgres}}
CREATE OR REPLACE FUNCTION log_append(uid TEXT, o BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
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
