-- The transparency log's format since the last release (the log_at_commit migration's): one
-- step from there, keeping every entry, its hashes and the tree.
--
-- An update's log index is a column of the update itself, so a read that shows it (a receipt
-- read back, a history, the console's updates) reads the update's own row, and log_entries
-- keeps no index by update id: nothing reads an entry by its update, the log is read by index.
-- The stored hashes an entry's append adds (the leaf's, then one per subtree the entry
-- completes, level by level: Go's sumdb/tlog StoredHashes) are kept in the entry's own row, so
-- an append writes one row of one table: entry n's hashes are those at stored-hash indexes
-- 2n - popcount(n) up to, not including, 2(n+1) - popcount(n+1).
--
-- An update's entry is made of what the ledger's own rows hold once the update commits: the
-- update's row (its ID, offset, kind, party, time and log index) and, for an update a party
-- signed, the prepared transaction's row (the bytes signed, the signer's key and the
-- signature), named by the update's prepared_hash. Nothing else is written with the update
-- for its entry to be durable with it.
--
-- SQLite writes each entry in the transaction that commits its update; its head is read off
-- the log itself (the size is one past the last entry's index, the frontier the stored hashes
-- of the maximal complete subtrees), and its log tables are keyed by their INTEGER PRIMARY KEY
-- (the rowid), with no separate index: every commit writes fewer pages.
--
-- PostgreSQL's COMMIT numbers each update under the offset lock (log_sequence, and the index
-- on the update's row) and reports it to the session; the tree (the entry's bytes in
-- log_entries, its hashes, the head and the offset of the last update it holds) is built from
-- the ledger's rows afterwards, in offset order, by whichever instance gets to it first. An
-- execute marks its prepared transaction executed, with its receipt, in the transaction's body:
-- the receipt stored there lacks the log index, which a read adds from updates.log_index
-- (receipts stored before keep theirs and are answered as they are).
ALTER TABLE updates ADD COLUMN log_index BIGINT;

--bun:split

UPDATE updates SET log_index = (SELECT e.log_index FROM log_entries AS e WHERE e.update_id = updates.update_id);

--bun:split

{{if .Postgres}}
ALTER TABLE log_entries DROP CONSTRAINT log_entries_update_id_key;
{{else}}
-- SQLite keeps a UNIQUE column's index for as long as the table: rebuilt without it, keyed by
-- its rowid.
CREATE TABLE log_entries_by_index (
    log_index INTEGER PRIMARY KEY,
    update_id TEXT NOT NULL,
    entry     BLOB NOT NULL
);
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
INSERT INTO log_entries_by_index (log_index, update_id, entry) SELECT log_index, update_id, entry FROM log_entries;
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
DROP TABLE log_entries;
{{end}}

--bun:split

{{if .Postgres}}
SELECT 1;
{{else}}
ALTER TABLE log_entries_by_index RENAME TO log_entries;
{{end}}

--bun:split

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
-- The offset of the last update the tree holds: the tree takes in next the updates after it.
ALTER TABLE log_head ADD COLUMN last_offset BIGINT NOT NULL DEFAULT 0;
{{else}}
DROP TABLE log_head;
{{end}}

--bun:split

{{if .Postgres}}
UPDATE log_head SET last_offset = COALESCE((SELECT MAX(ledger_offset) FROM updates WHERE log_index < log_head.size), 0);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- next is the number of entries the ledger has committed (numbered); the head's size the
-- number the tree holds.
CREATE TABLE log_sequence (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    next BIGINT NOT NULL
);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
INSERT INTO log_sequence (id, next) SELECT 1, size FROM log_head;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- Under the offset lock: the offset and the next log index, written on the update's row, and
-- the index reported to the session in application_name, "<name before> #log <index> <the
-- update ID's first 8 characters>", which the server sends with the COMMIT's answer: the
-- transaction's last update reports last, and its earlier ones precede it one by one. A
-- function setting marketd.transparency_log to off (a benchmark's store without the log)
-- numbers nothing.
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
    n BIGINT;
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    o := nextval('ledger_offsets');
    IF current_setting('marketd.transparency_log', true) IS DISTINCT FROM 'off' THEN
        UPDATE log_sequence SET next = next + 1 WHERE id = 1 RETURNING next - 1 INTO n;
        PERFORM set_config('application_name',
            left(split_part(current_setting('application_name'), ' #log ', 1), 29) || ' #log ' || n::text || ' ' || left(NEW.update_id, 8), false);
    END IF;
    UPDATE updates SET ledger_offset = o, log_index = n WHERE update_id = NEW.update_id;
    UPDATE nft_activity SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE swap_intent_views SET closed_offset = o WHERE closed_update = NEW.update_id;
    RETURN NULL;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- The COMMIT builds no entry any more, and the transaction leaves it nothing to build one from.
DROP FUNCTION log_append(TEXT, BIGINT);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
DROP TABLE log_pending;
{{else}}
SELECT 1;
{{end}}

--bun:split

ALTER TABLE prepared_txs ADD COLUMN signature {{.Bytes}};

--bun:split

-- The prepared transaction a party signed for the update (its hash), if one did.
ALTER TABLE updates ADD COLUMN prepared_hash {{.Bytes}};
