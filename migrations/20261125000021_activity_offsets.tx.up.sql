-- A collection's activity feed and a pool's outcomes feed follow the log: a subscriber
-- resumes after the last (offset, row) it saw. Each event and each filled intent carries its
-- update's offset, set where the offset is assigned, so a feed is a walk of one index from the
-- position, however long the history.
ALTER TABLE nft_activity ADD COLUMN ledger_offset BIGINT;

--bun:split

ALTER TABLE swap_intent_views ADD COLUMN closed_offset BIGINT;

--bun:split

UPDATE swap_intent_views SET closed_offset = (SELECT u.ledger_offset FROM updates AS u WHERE u.update_id = swap_intent_views.closed_update)
WHERE closed_update IS NOT NULL;

--bun:split

CREATE INDEX swap_intent_views_closed ON swap_intent_views (closed_update) WHERE closed_update IS NOT NULL;

--bun:split

CREATE INDEX swap_intent_views_pool_feed ON swap_intent_views (pool_id, closed_offset, intent_cid) WHERE status = 'filled';

--bun:split

UPDATE nft_activity SET ledger_offset = (SELECT u.ledger_offset FROM updates AS u WHERE u.update_id = nft_activity.update_id);

--bun:split

CREATE INDEX nft_activity_feed ON nft_activity (collection_id, ledger_offset, id);

--bun:split
{{if .Postgres}}
-- The offset is assigned at COMMIT (the foundation migration): its events get it in the same
-- step, under the same lock.
CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    o := nextval('ledger_offsets');
    UPDATE updates SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE nft_activity SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE swap_intent_views SET closed_offset = o WHERE closed_update = NEW.update_id;
    RETURN NULL;
END
$$;
{{else}}
-- SQLite gives the offset as the update's row is written: its events written before get it
-- then, any written after take it as they are written.
CREATE TRIGGER nft_activity_offset_at_update AFTER INSERT ON updates BEGIN
    UPDATE nft_activity SET ledger_offset = NEW.ledger_offset WHERE update_id = NEW.update_id;
    UPDATE swap_intent_views SET closed_offset = NEW.ledger_offset WHERE closed_update = NEW.update_id;
END;

--bun:split

CREATE TRIGGER nft_activity_offset_at_event AFTER INSERT ON nft_activity WHEN NEW.ledger_offset IS NULL BEGIN
    UPDATE nft_activity SET ledger_offset = (SELECT u.ledger_offset FROM updates AS u WHERE u.update_id = NEW.update_id)
    WHERE id = NEW.id;
END;

--bun:split

CREATE TRIGGER swap_intent_views_offset_at_insert AFTER INSERT ON swap_intent_views
WHEN NEW.closed_update IS NOT NULL AND NEW.closed_offset IS NULL BEGIN
    UPDATE swap_intent_views SET closed_offset = (SELECT u.ledger_offset FROM updates AS u WHERE u.update_id = NEW.closed_update)
    WHERE intent_cid = NEW.intent_cid;
END;

--bun:split

CREATE TRIGGER swap_intent_views_offset_at_close AFTER UPDATE OF closed_update ON swap_intent_views
WHEN NEW.closed_update IS NOT NULL AND NEW.closed_offset IS NULL BEGIN
    UPDATE swap_intent_views SET closed_offset = (SELECT u.ledger_offset FROM updates AS u WHERE u.update_id = NEW.closed_update)
    WHERE intent_cid = NEW.intent_cid;
END;
{{end}}
