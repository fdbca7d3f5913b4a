{{if .Postgres}}
-- The code before builds entries from its queue only: updates numbered but not yet in the
-- tree would never be built. Starting marketd once builds them (its integration); refuse
-- until then.
DO $$
BEGIN
    IF (SELECT next FROM log_sequence) <> (SELECT size FROM log_head) THEN
        RAISE EXCEPTION 'the transparency log has entries not yet in its tree: start marketd once to build them, then roll back';
    END IF;
END
$$;
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
CREATE TABLE log_queue (
    update_id TEXT PRIMARY KEY,
    position  INTEGER NOT NULL,
    tail      BYTEA NOT NULL
);
{{else}}
SELECT 1;
{{end}}

--bun:split

{{if .Postgres}}
-- assign_ledger_offset as the log_number_in_one_statement migration left it.
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
    n BIGINT;
    k INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    o := nextval('ledger_offsets');
    UPDATE log_sequence AS s SET next = s.next + 1 FROM log_queue AS q
    WHERE s.id = 1 AND q.update_id = NEW.update_id
    RETURNING s.next - 1, q.position INTO n, k;
    IF k = 0 THEN
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
ALTER TABLE log_head DROP COLUMN last_offset;
{{else}}
SELECT 1;
{{end}}

--bun:split

ALTER TABLE updates DROP COLUMN prepared_hash;

--bun:split

ALTER TABLE prepared_txs DROP COLUMN signature;
