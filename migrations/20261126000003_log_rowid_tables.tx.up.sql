{{if .Postgres}}
SELECT 1;
{{else}}
-- On SQLite a table keyed by an INTEGER PRIMARY KEY is stored by that key (its rowid), with no
-- separate index for it: rebuilt so, log_entries and log_hashes each write one page fewer per
-- append. Their columns and their contents are unchanged.
CREATE TABLE log_entries_by_index (
    log_index INTEGER PRIMARY KEY,
    update_id TEXT NOT NULL UNIQUE,
    entry     BLOB NOT NULL
);

--bun:split

INSERT INTO log_entries_by_index (log_index, update_id, entry) SELECT log_index, update_id, entry FROM log_entries;

--bun:split

DROP TABLE log_entries;

--bun:split

ALTER TABLE log_entries_by_index RENAME TO log_entries;

--bun:split

CREATE TABLE log_hashes_by_index (
    hash_index INTEGER PRIMARY KEY,
    hash       BLOB NOT NULL
);

--bun:split

INSERT INTO log_hashes_by_index (hash_index, hash) SELECT hash_index, hash FROM log_hashes;

--bun:split

DROP TABLE log_hashes;

--bun:split

ALTER TABLE log_hashes_by_index RENAME TO log_hashes;
{{end}}
