{{if .Postgres}}
-- assign_ledger_offset as the log_queue migration left it, with the queued entry's lookup and
-- the next log index taken in one statement: each statement the trigger runs under the offset
-- lock starts an executor of its own, and every commit waits for the lock.
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
