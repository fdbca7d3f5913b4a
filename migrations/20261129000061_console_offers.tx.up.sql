-- The console's offers list walks offers newest made first, of any maker or of one, of any
-- collection or of one (every version is a row; the list keeps each offer's latest).
CREATE INDEX nft_offers_made ON nft_offers (posted_at, offer_id);

--bun:split

CREATE INDEX nft_offers_maker_made ON nft_offers (maker, posted_at, offer_id);

--bun:split

CREATE INDEX nft_offers_collection_made ON nft_offers (collection_id, posted_at, offer_id);

--bun:split

-- A party's accepts, newest first: the NFTs it sold into offers (from_party) and those it
-- bought through its offers (to_party).
CREATE INDEX nft_activity_offer_seller ON nft_activity (from_party, id) WHERE kind = 'offer-accepted';

--bun:split

CREATE INDEX nft_activity_offer_maker ON nft_activity (to_party, id) WHERE kind = 'offer-accepted';
