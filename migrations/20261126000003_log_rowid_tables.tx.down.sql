{{if .Postgres}}
SELECT 1;
{{else}}
CREATE TABLE log_entries_by_key (
    log_index BIGINT PRIMARY KEY,
    update_id TEXT NOT NULL UNIQUE,
    entry     BLOB NOT NULL
);

--bun:split

INSERT INTO log_entries_by_key (log_index, update_id, entry) SELECT log_index, update_id, entry FROM log_entries;

--bun:split

DROP TABLE log_entries;

--bun:split

ALTER TABLE log_entries_by_key RENAME TO log_entries;

--bun:split

CREATE TABLE log_hashes_by_key (
    hash_index BIGINT PRIMARY KEY,
    hash       BLOB NOT NULL
);

--bun:split

INSERT INTO log_hashes_by_key (hash_index, hash) SELECT hash_index, hash FROM log_hashes;

--bun:split

DROP TABLE log_hashes;

--bun:split

ALTER TABLE log_hashes_by_key RENAME TO log_hashes;
{{end}}
