-- Swaps. Pools, LP quotes, intents and LP fees are ledger contracts (lifecycle columns as in
-- the ledger migration): an LP quote and a pending intent hold what they lock (instrument,
-- amount), and a fill consumes them and creates what is left. oracle_prices is the
-- operator's price feed; swap_intent_views and swap_fills are read models kept in the
-- transaction that commits each change.

CREATE TABLE oracle_prices (
    base   TEXT NOT NULL,
    quote  TEXT NOT NULL,
    price  {{.Decimal}} NOT NULL,
    set_at BIGINT NOT NULL,
    PRIMARY KEY (base, quote)
);

--bun:split

CREATE TABLE swap_pools (
    cid             TEXT PRIMARY KEY,
    pool_id         TEXT NOT NULL UNIQUE,
    operator        TEXT NOT NULL REFERENCES parties (party_id),
    base            TEXT NOT NULL,
    quote           TEXT NOT NULL,
    fee_bps         INTEGER NOT NULL,
    created_update  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    consumed_update TEXT,
    consumed_at     BIGINT
);

--bun:split

-- One row per version of an LP quote: a fill consumes the version it takes from and creates
-- the next; quote_id (the first version's cid) names the quote across its versions.
CREATE TABLE lp_quotes (
    cid             TEXT PRIMARY KEY,
    quote_id        TEXT NOT NULL,
    pool_id         TEXT NOT NULL,
    lp              TEXT NOT NULL REFERENCES parties (party_id),
    side            TEXT NOT NULL,
    price           {{.Decimal}} NOT NULL,
    size            {{.Decimal}} NOT NULL,
    remaining       {{.Decimal}} NOT NULL,
    fees_accrued    {{.Decimal}} NOT NULL,
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

CREATE UNIQUE INDEX lp_quotes_live ON lp_quotes (quote_id) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX lp_quotes_book ON lp_quotes (pool_id, side) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX lp_quotes_lp ON lp_quotes (lp, posted_at) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX lp_quotes_expiry ON lp_quotes (expires_at) WHERE consumed_update IS NULL;

--bun:split

-- Fees a fill retained for the quote's LP, until claim-fees pays them out.
CREATE TABLE lp_fees (
    cid             TEXT PRIMARY KEY,
    lp              TEXT NOT NULL REFERENCES parties (party_id),
    pool_id         TEXT NOT NULL,
    quote_id        TEXT NOT NULL,
    instrument      TEXT NOT NULL,
    amount          {{.Decimal}} NOT NULL,
    created_update  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    consumed_update TEXT,
    consumed_at     BIGINT
);

--bun:split

CREATE INDEX lp_fees_live ON lp_fees (pool_id, lp) WHERE consumed_update IS NULL;

--bun:split

-- A pending intent: what the taker sells, locked until it fills, is cancelled or expires.
CREATE TABLE swap_intents (
    cid             TEXT PRIMARY KEY,
    taker           TEXT NOT NULL REFERENCES parties (party_id),
    pool_id         TEXT NOT NULL,
    instrument      TEXT NOT NULL,
    amount          {{.Decimal}} NOT NULL,
    min_receive     {{.Decimal}} NOT NULL,
    deadline        BIGINT NOT NULL,
    created_update  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    consumed_update TEXT,
    consumed_at     BIGINT
);

--bun:split

CREATE INDEX swap_intents_live ON swap_intents (pool_id, created_at) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX swap_intents_taker ON swap_intents (taker) WHERE consumed_update IS NULL;

--bun:split

CREATE INDEX swap_intents_deadline ON swap_intents (deadline) WHERE consumed_update IS NULL;

--bun:split

-- Every intent, whether it ever waited or filled at once, with its status and outcome.
CREATE TABLE swap_intent_views (
    intent_cid   TEXT PRIMARY KEY,
    taker        TEXT NOT NULL,
    pool_id      TEXT NOT NULL,
    sell         TEXT NOT NULL,
    amount       {{.Decimal}} NOT NULL,
    min_receive  {{.Decimal}} NOT NULL,
    deadline     BIGINT NOT NULL,
    status       TEXT NOT NULL,
    receive      TEXT NOT NULL,
    received     {{.Decimal}},
    fee          {{.Decimal}},
    created_at   BIGINT NOT NULL,
    closed_update TEXT,
    closed_at    BIGINT
);

--bun:split

CREATE INDEX swap_intent_views_taker ON swap_intent_views (taker, status, created_at);

--bun:split

CREATE INDEX swap_intent_views_taker_filled ON swap_intent_views (taker, closed_at, intent_cid) WHERE status = 'filled';

--bun:split

CREATE INDEX swap_intent_views_pool_filled ON swap_intent_views (pool_id, closed_at, intent_cid) WHERE status = 'filled';

--bun:split

CREATE TABLE swap_fills (
    intent_cid TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    update_id  TEXT NOT NULL,
    pool_id    TEXT NOT NULL,
    quote_id   TEXT NOT NULL,
    lp         TEXT NOT NULL,
    price      {{.Decimal}} NOT NULL,
    amount_in  {{.Decimal}} NOT NULL,
    amount_out {{.Decimal}} NOT NULL,
    fee        {{.Decimal}} NOT NULL,
    PRIMARY KEY (intent_cid, seq)
);
