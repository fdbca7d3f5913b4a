{{if .Postgres}}
-- A commit that appends to the transparency log takes its offsets itself, in one statement,
-- before it computes its entries: claim_log_offsets takes the offset lock (held until the
-- commit is visible), then reads the log's head and hands out n offsets, in that order.
CREATE FUNCTION claim_log_offsets(n INTEGER, OUT size BIGINT, OUT frontier BYTEA, OUT offsets BIGINT[])
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    SELECT h.size, h.frontier INTO size, frontier FROM log_head AS h WHERE h.id = 1;
    offsets := ARRAY(SELECT nextval('ledger_offsets') FROM generate_series(1, n));
END
$$;

--bun:split

-- An update whose offset its transaction already set (claim_log_offsets) keeps it; the
-- others get theirs at COMMIT, as before. Either way its events get it here.
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
BEGIN
    SELECT ledger_offset INTO o FROM updates WHERE update_id = NEW.update_id;
    IF o IS NULL THEN
        PERFORM pg_advisory_xact_lock(32199672997732211);
        o := nextval('ledger_offsets');
        UPDATE updates SET ledger_offset = o WHERE update_id = NEW.update_id;
    END IF;
    UPDATE nft_activity SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE swap_intent_views SET closed_offset = o WHERE closed_update = NEW.update_id;
    RETURN NULL;
END
$$;
{{else}}
-- SQLite assigns offsets as rows are written: nothing changes.
SELECT 1;
{{end}}
