{{if .Postgres}}
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    UPDATE updates SET ledger_offset = nextval('ledger_offsets') WHERE update_id = NEW.update_id;
    RETURN NULL;
END
$$;
{{else}}
DROP TRIGGER swap_intent_views_offset_at_close;

--bun:split

DROP TRIGGER swap_intent_views_offset_at_insert;

--bun:split

DROP TRIGGER nft_activity_offset_at_event;

--bun:split

DROP TRIGGER nft_activity_offset_at_update;
{{end}}
--bun:split

DROP INDEX swap_intent_views_pool_feed;

--bun:split

DROP INDEX swap_intent_views_closed;

--bun:split

ALTER TABLE swap_intent_views DROP COLUMN closed_offset;

--bun:split

DROP INDEX nft_activity_feed;

--bun:split

ALTER TABLE nft_activity DROP COLUMN ledger_offset;
