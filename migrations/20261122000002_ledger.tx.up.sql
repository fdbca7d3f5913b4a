-- The embedded ledger. Every contract table has the same lifecycle columns: one committed
-- update creates a contract, at most one later update consumes it; active means unconsumed.

-- Holdings: UTXO-style amounts of one instrument owned by one party.
CREATE TABLE holdings (
    cid             TEXT PRIMARY KEY,
    owner           TEXT NOT NULL REFERENCES parties (party_id),
    instrument      TEXT NOT NULL,
    amount          {{.Decimal}} NOT NULL,
    created_update  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    consumed_update TEXT,
    consumed_at     BIGINT
);

--bun:split

CREATE INDEX holdings_active ON holdings (owner, instrument) WHERE consumed_update IS NULL;

--bun:split

-- Receive-preapprovals: a party's consent to be credited NFTs or USDCx by others, until expires_at.
CREATE TABLE preapprovals (
    cid             TEXT PRIMARY KEY,
    party_id        TEXT NOT NULL REFERENCES parties (party_id),
    kind            TEXT NOT NULL,
    expires_at      BIGINT NOT NULL,
    created_update  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    consumed_update TEXT,
    consumed_at     BIGINT
);

--bun:split

-- A party has at most one unconsumed preapproval of each kind.
CREATE UNIQUE INDEX preapprovals_active ON preapprovals (party_id, kind) WHERE consumed_update IS NULL;

--bun:split

-- What each update consumed and created, in order: the ledger's event log.
CREATE TABLE update_events (
    update_id TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    event     TEXT NOT NULL,
    template  TEXT NOT NULL,
    cid       TEXT NOT NULL,
    PRIMARY KEY (update_id, seq)
);

--bun:split

CREATE INDEX update_events_cid ON update_events (cid);

--bun:split

-- The contracts a prepared transaction would consume until it expires, so a later prepare
-- can prefer others.
CREATE TABLE prepared_inputs (
    hash       {{.Bytes}} NOT NULL REFERENCES prepared_txs (hash) ON DELETE CASCADE,
    cid        TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (hash, cid)
);

--bun:split

CREATE INDEX prepared_inputs_cid ON prepared_inputs (cid);

--bun:split

-- Activity rewards: what an update earned its acting party, and each party's running total.
ALTER TABLE updates ADD COLUMN reward {{.Decimal}};

--bun:split

CREATE INDEX updates_rewards ON updates (act_as, ledger_offset) WHERE reward IS NOT NULL;

--bun:split

CREATE TABLE reward_balances (
    party_id   TEXT PRIMARY KEY REFERENCES parties (party_id),
    balance    {{.Decimal}} NOT NULL,
    updated_at BIGINT NOT NULL
);
