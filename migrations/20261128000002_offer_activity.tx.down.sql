DELETE FROM nft_activity WHERE nft_id = '';

--bun:split

DROP INDEX nft_activity_feed_kind;

--bun:split

ALTER TABLE nft_activity DROP COLUMN offer_cid;
