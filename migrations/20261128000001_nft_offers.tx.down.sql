ALTER TABLE collections DROP COLUMN top_offer;

--bun:split

DROP TABLE nft_offers;
