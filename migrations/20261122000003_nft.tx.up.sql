-- The NFT marketplace. NFTs and listings are ledger contracts (lifecycle columns as in the
-- ledger migration); collections, phases and items are the operator's registry; nft_items,
-- nft_traits, collection_owners and nft_activity are read models kept in the transaction
-- that commits each change. Sort keys (*_key) are fixed-width decimal text, so one index
-- orders them by value on both dialects; '~' (after every digit) stands for "none".

CREATE TABLE collections (
    collection_id   TEXT PRIMARY KEY,
    slug            TEXT NOT NULL UNIQUE,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL,
    image           TEXT NOT NULL,
    creator         TEXT NOT NULL REFERENCES parties (party_id),
    currency        TEXT NOT NULL,
    royalty_bps     INTEGER NOT NULL,
    supply          INTEGER NOT NULL,
    minted          INTEGER NOT NULL,
    burned          INTEGER NOT NULL,
    floor_price     {{.Decimal}},
    floor_key       TEXT NOT NULL,
    listed_count    INTEGER NOT NULL,
    owners          INTEGER NOT NULL,
    volume          {{.Decimal}} NOT NULL,
    volume_desc_key TEXT NOT NULL,
    created_at      BIGINT NOT NULL
);

--bun:split

CREATE INDEX collections_newest ON collections (created_at DESC, collection_id DESC);

--bun:split

CREATE INDEX collections_volume ON collections (volume_desc_key, collection_id);

--bun:split

CREATE INDEX collections_floor ON collections (floor_key, collection_id);

--bun:split

-- What each serial becomes when it is minted: its name, image and traits (JSON).
CREATE TABLE collection_items (
    collection_id TEXT NOT NULL REFERENCES collections (collection_id),
    serial        INTEGER NOT NULL,
    name          TEXT NOT NULL,
    image         TEXT NOT NULL,
    traits        TEXT NOT NULL,
    PRIMARY KEY (collection_id, serial)
);

--bun:split

CREATE TABLE mint_phases (
    collection_id   TEXT NOT NULL REFERENCES collections (collection_id),
    name            TEXT NOT NULL,
    price           {{.Decimal}} NOT NULL,
    start_at        BIGINT NOT NULL,
    end_at          BIGINT NOT NULL,
    per_party_limit INTEGER NOT NULL,
    supply          INTEGER,
    minted          INTEGER NOT NULL,
    allow_list      BOOLEAN NOT NULL,
    PRIMARY KEY (collection_id, name)
);

--bun:split

CREATE TABLE phase_allow (
    collection_id TEXT NOT NULL,
    phase         TEXT NOT NULL,
    party_id      TEXT NOT NULL,
    PRIMARY KEY (collection_id, phase, party_id)
);

--bun:split

CREATE TABLE phase_mints (
    collection_id TEXT NOT NULL,
    phase         TEXT NOT NULL,
    party_id      TEXT NOT NULL,
    minted        INTEGER NOT NULL,
    PRIMARY KEY (collection_id, phase, party_id)
);

--bun:split

-- NFT contracts: one live contract per NFT (nft_id), owned by one party.
CREATE TABLE nfts (
    cid             TEXT PRIMARY KEY,
    nft_id          TEXT NOT NULL,
    collection_id   TEXT NOT NULL,
    serial          INTEGER NOT NULL,
    owner           TEXT NOT NULL REFERENCES parties (party_id),
    created_update  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    consumed_update TEXT,
    consumed_at     BIGINT
);

--bun:split

CREATE INDEX nfts_nft_id ON nfts (nft_id);

--bun:split

CREATE UNIQUE INDEX nfts_live ON nfts (nft_id) WHERE consumed_update IS NULL;

--bun:split

-- Listings: the seller's offer to sell the NFT contract nft_cid at price, until expires_at.
CREATE TABLE listings (
    cid             TEXT PRIMARY KEY,
    seller          TEXT NOT NULL REFERENCES parties (party_id),
    nft_cid         TEXT NOT NULL,
    nft_id          TEXT NOT NULL,
    collection_id   TEXT NOT NULL,
    price           {{.Decimal}} NOT NULL,
    currency        TEXT NOT NULL,
    expires_at      BIGINT,
    created_update  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    consumed_update TEXT,
    consumed_at     BIGINT
);

--bun:split

CREATE UNIQUE INDEX listings_live ON listings (nft_cid) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX listings_expiry ON listings (expires_at) WHERE consumed_update IS NULL AND expires_at IS NOT NULL;

--bun:split

CREATE INDEX listings_collection ON listings (collection_id, created_at DESC);

--bun:split

CREATE INDEX listings_seller ON listings (seller, created_at DESC);

--bun:split

-- One row per live NFT: what the list endpoints read, with its current listing.
CREATE TABLE nft_items (
    nft_id         TEXT PRIMARY KEY,
    collection_id  TEXT NOT NULL,
    serial         INTEGER NOT NULL,
    name           TEXT NOT NULL,
    image          TEXT NOT NULL,
    traits         TEXT NOT NULL,
    owner          TEXT NOT NULL,
    contract_id    TEXT NOT NULL UNIQUE,
    listing_cid    TEXT,
    list_price     {{.Decimal}},
    list_currency  TEXT,
    list_expires   BIGINT,
    price_asc_key  TEXT NOT NULL,
    price_desc_key TEXT NOT NULL
);

--bun:split

CREATE UNIQUE INDEX nft_items_serial ON nft_items (collection_id, serial);

--bun:split

CREATE INDEX nft_items_price_asc ON nft_items (collection_id, price_asc_key, serial);

--bun:split

CREATE INDEX nft_items_price_desc ON nft_items (collection_id, price_desc_key, serial);

--bun:split

CREATE INDEX nft_items_owner ON nft_items (collection_id, owner, serial);

--bun:split

CREATE TABLE nft_traits (
    collection_id TEXT NOT NULL,
    trait_type    TEXT NOT NULL,
    trait_value   TEXT NOT NULL,
    serial        INTEGER NOT NULL,
    PRIMARY KEY (collection_id, trait_type, trait_value, serial)
);
{{if .Postgres}}
--bun:split

-- Trait values are far from independent of their collection and type (one value may cover most
-- of a collection): without these statistics the planner thinks a filter selective, sorts every
-- match, and a price-sorted page of a 100,000-NFT market takes half a second instead of a few
-- index probes.
CREATE STATISTICS nft_traits_values (mcv, ndistinct) ON collection_id, trait_type, trait_value FROM nft_traits;
{{end}}

--bun:split

CREATE TABLE collection_owners (
    collection_id TEXT NOT NULL,
    owner         TEXT NOT NULL,
    nfts          INTEGER NOT NULL,
    PRIMARY KEY (collection_id, owner)
);

--bun:split

-- Each NFT's history, as the updates that changed it: minted, listed, delisted, sold,
-- transferred, burned.
CREATE TABLE nft_activity (
{{if .Postgres}}
    id            BIGSERIAL PRIMARY KEY,
{{else}}
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
{{end}}
    nft_id        TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    update_id     TEXT NOT NULL,
    kind          TEXT NOT NULL,
    from_party    TEXT,
    to_party      TEXT,
    price         {{.Decimal}},
    currency      TEXT,
    at            BIGINT NOT NULL
);

--bun:split

CREATE INDEX nft_activity_nft ON nft_activity (nft_id, id DESC);

--bun:split

CREATE INDEX nft_activity_collection ON nft_activity (collection_id, id DESC);
