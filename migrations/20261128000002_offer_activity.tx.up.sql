-- A collection's activity feed shows its offers too: an offer made, cancelled or expired is an
-- event of the collection that names no NFT (nft_id ''), and offer_cid names the offer of an
-- offer's event (made, cancelled, accepted). The feed filtered by kind walks an index per kind.
ALTER TABLE nft_activity ADD COLUMN offer_cid TEXT;

--bun:split

CREATE INDEX nft_activity_feed_kind ON nft_activity (collection_id, kind, ledger_offset, id);
