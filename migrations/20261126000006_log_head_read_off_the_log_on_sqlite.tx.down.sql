{{if .Postgres}}
SELECT 1;
{{else}}
CREATE TABLE log_head (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    size     BIGINT NOT NULL,
    frontier BLOB NOT NULL
);
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
-- The head as the log holds it: for each set bit b of the size n, largest first, the subtree of
-- 2^b entries ending at entry m = ((n >> b) << b) - 1, whose stored hash is at index
-- b + m + m/2 + m/4 + ... (Go's sumdb/tlog StoredHashIndex).
INSERT INTO log_head (id, size, frontier)
WITH RECURSIVE
    size(n) AS (SELECT COALESCE(MAX(log_index) + 1, 0) FROM log_entries),
    bits(b) AS (SELECT 0 UNION ALL SELECT b + 1 FROM bits WHERE b < 62),
    subtrees(b, m) AS (SELECT b, ((n >> b) << b) - 1 FROM bits, size WHERE (n >> b) & 1 = 1),
    sums(b, x, acc) AS (SELECT b, m, b FROM subtrees UNION ALL SELECT b, x >> 1, acc + x FROM sums WHERE x > 0),
    frontier(b, hash_index) AS (SELECT b, acc FROM sums WHERE x = 0)
SELECT 1, (SELECT n FROM size),
    COALESCE((SELECT unhex(group_concat(hex(h.hash), '' ORDER BY f.b DESC))
              FROM frontier AS f JOIN log_hashes AS h ON h.hash_index = f.hash_index), X'');
{{end}}
