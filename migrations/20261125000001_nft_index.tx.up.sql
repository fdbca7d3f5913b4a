-- The NFT index (store/nft_index.go) follows the update log: for each update past the offset it
-- has applied, it finds the NFTs the update changed through their history events.
CREATE INDEX nft_activity_update ON nft_activity (update_id);
