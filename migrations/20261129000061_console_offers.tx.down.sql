DROP INDEX nft_activity_offer_maker;

--bun:split

DROP INDEX nft_activity_offer_seller;

--bun:split

DROP INDEX nft_offers_collection_made;

--bun:split

DROP INDEX nft_offers_maker_made;

--bun:split

DROP INDEX nft_offers_made;
