-- An update's log entry is made of what the ledger's own rows hold once the update commits:
-- the update's row (its ID, offset, kind, party, time and log index) and, for an update a
-- party signed, the prepared transaction's row (the bytes signed, the signer's key and now the
-- signature). Nothing else needs to be written with the update for its entry to be durable
-- with it: the transaction writes no copy of the entry (the log_queue migration's queue is
-- dropped), and the tree is built afterwards from those rows, in offset order.

{{if .Postgres}}
ALTER TABLE prepared_txs ADD COLUMN signature BYTEA;
{{else}}
ALTER TABLE prepared_txs ADD COLUMN signature BLOB;
{{end}}

--bun:split

-- The prepared transaction a party signed for the update (its hash), if one did.
{{if .Postgres}}
ALTER TABLE updates ADD COLUMN prepared_hash BYTEA;
{{else}}
ALTER TABLE updates ADD COLUMN prepared_hash BLOB;
{{end}}

--bun:split

{{if .Postgres}}
-- The offset of the last update the tree holds: the tree takes in next the updates after it.
ALTER TABLE log_head ADD COLUMN last_offset BIGINT NOT NULL DEFAULT 0;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
UPDATE log_head SET last_offset = COALESCE((SELECT MAX(ledger_offset) FROM updates WHERE log_index < log_head.size), 0);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- Entries still queued: their signature and their prepared transaction move to the rows the
-- tree now builds them from.
UPDATE prepared_txs AS p
SET signature = decode(convert_from(convert_to('{"updateId":"' || q.update_id || '","offset":0', 'UTF8') || q.tail, 'UTF8')::jsonb ->> 'signature', 'base64')
FROM log_queue AS q WHERE p.update_id = q.update_id;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
UPDATE updates AS u SET prepared_hash = p.hash
FROM log_queue AS q JOIN prepared_txs AS p ON p.update_id = q.update_id
WHERE u.update_id = q.update_id;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
DROP TABLE log_queue;
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
