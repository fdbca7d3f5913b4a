DROP TABLE log_head;

--bun:split

DROP TABLE log_hashes;

--bun:split

DROP TABLE log_entries;
