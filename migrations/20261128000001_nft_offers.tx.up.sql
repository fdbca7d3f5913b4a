-- Offers: a party's funded bids for NFTs of one collection. Each row is one version of an
-- offer contract: it holds price × remaining of the collection's currency (instrument,
-- amount), and an accept that leaves units open consumes the version and creates the next,
-- so offer_id (the first version's cid) names the offer across versions. kind is item (one
-- NFT, by nft_id and serial), collection (any NFT of it) or trait (any NFT whose traits match
-- traits, canonical JSON). price_key orders prices best first (a descending sort key).
CREATE TABLE nft_offers (
    cid             TEXT PRIMARY KEY,
    offer_id        TEXT NOT NULL,
    maker           TEXT NOT NULL REFERENCES parties (party_id),
    kind            TEXT NOT NULL,
    collection_id   TEXT NOT NULL REFERENCES collections (collection_id),
    serial          INTEGER,
    nft_id          TEXT,
    traits          TEXT,
    price           {{.Decimal}} NOT NULL,
    price_key       TEXT NOT NULL,
    quantity        INTEGER NOT NULL,
    remaining       INTEGER NOT NULL,
    instrument      TEXT NOT NULL,
    amount          {{.Decimal}} NOT NULL,
    posted_at       BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    created_update  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    consumed_update TEXT,
    consumed_at     BIGINT
);

--bun:split

CREATE UNIQUE INDEX nft_offers_live ON nft_offers (offer_id) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX nft_offers_versions ON nft_offers (offer_id, created_at);

--bun:split

CREATE INDEX nft_offers_book ON nft_offers (collection_id, price_key, offer_id) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX nft_offers_item ON nft_offers (nft_id, price_key, offer_id) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX nft_offers_maker ON nft_offers (maker, price_key, offer_id) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX nft_offers_expiry ON nft_offers (expires_at) WHERE consumed_update IS NULL;

--bun:split

-- The best open collection-wide offer, kept with the collection's other figures.
ALTER TABLE collections ADD COLUMN top_offer {{.Decimal}};
