{{if .Postgres}}
SELECT 1;
{{else}}
-- On SQLite the log's head is read off the log itself: the size is one past the last entry's
-- index, and the frontier the stored hashes of the maximal complete subtrees, which the
-- appends that completed them wrote. Its row would cost every commit one more page.
DROP TABLE log_head;
{{end}}
