{{if .Postgres}}
-- assign_ledger_offset as the log_queue migration left it.
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
    n BIGINT;
    k INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    o := nextval('ledger_offsets');
    SELECT position INTO k FROM log_queue WHERE update_id = NEW.update_id;
    IF FOUND THEN
        UPDATE log_sequence SET next = next + 1 WHERE id = 1 RETURNING next - 1 INTO n;
        IF k = 0 THEN
            PERFORM set_config('application_name',
                left(split_part(current_setting('application_name'), ' #log ', 1), 29) || ' #log ' || n::text || ' ' || left(NEW.update_id, 8), false);
        END IF;
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
