-- Times are BIGINT Unix microseconds on both dialects, so comparisons in SQL are exact.

-- Parties onboarded on the ledger: an Ed25519 key and the id derived from it.
CREATE TABLE parties (
    party_id     TEXT PRIMARY KEY,
    hint         TEXT NOT NULL,
    public_key   {{.Bytes}} NOT NULL UNIQUE,
    onboarded_at BIGINT NOT NULL,
    update_id    TEXT NOT NULL
);

--bun:split

-- The ledger's append-only update log: one row per committed transaction. Offsets follow
-- commit order: a reader that has seen offset N has seen every update before it.
{{if .Postgres}}
CREATE TABLE updates (
    update_id     TEXT PRIMARY KEY,
    ledger_offset BIGINT UNIQUE, -- assigned at commit, by updates_assign_offset
    kind          TEXT NOT NULL,
    act_as        TEXT NOT NULL,
    recorded_at   BIGINT NOT NULL
);

--bun:split

CREATE SEQUENCE ledger_offsets;

--bun:split

-- A sequence alone hands out numbers in start order. This runs at COMMIT, under a lock held
-- until the commit is visible, so the next committer's offset is always the larger one; the
-- lock covers only the commit itself, never a client round trip.
CREATE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    UPDATE updates SET ledger_offset = nextval('ledger_offsets') WHERE update_id = NEW.update_id;
    RETURN NULL;
END
$$;

--bun:split

CREATE CONSTRAINT TRIGGER updates_assign_offset AFTER INSERT ON updates
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION assign_ledger_offset();
{{else}}
-- SQLite runs one writer at a time, so the autoincrement is already in commit order.
CREATE TABLE updates (
    ledger_offset INTEGER PRIMARY KEY AUTOINCREMENT,
    update_id     TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL,
    act_as        TEXT NOT NULL,
    recorded_at   BIGINT NOT NULL
);
{{end}}
--bun:split

CREATE INDEX updates_act_as ON updates (act_as, ledger_offset);

--bun:split

-- Prepared transactions: the canonical bytes a party signs, and once executed, the result
-- every replay answers with.
CREATE TABLE prepared_txs (
    hash        {{.Bytes}} PRIMARY KEY,
    kind        TEXT NOT NULL,
    act_as      TEXT NOT NULL,
    signer_key  {{.Bytes}} NOT NULL,
    body        {{.Bytes}} NOT NULL,
    prepared_at BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    update_id   TEXT,
    result      {{.Bytes}},
    executed_at BIGINT
);

--bun:split

CREATE INDEX prepared_txs_expires_at ON prepared_txs (expires_at);

--bun:split

-- Sign-in nonces that a verify has named. Challenges themselves are not stored: a nonce
-- seals its own issue time and party. The first verify that names a nonce spends it,
-- whatever that attempt's outcome; a row can go once its challenge has expired.
CREATE TABLE spent_nonces (
    nonce      TEXT PRIMARY KEY,
    party_id   TEXT NOT NULL,
    spent_at   BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

--bun:split

CREATE INDEX spent_nonces_expires_at ON spent_nonces (expires_at);

--bun:split

-- Sign-in sessions, one per browser instance, with the session's current token.
CREATE TABLE signin_sessions (
    sid              TEXT PRIMARY KEY,
    party_id         TEXT NOT NULL REFERENCES parties (party_id),
    created_at       BIGINT NOT NULL,
    user_agent       TEXT NOT NULL,
    client_addr      TEXT NOT NULL,
    token_jti        TEXT NOT NULL,
    token_issued_at  BIGINT NOT NULL,
    token_expires_at BIGINT NOT NULL,
    rotations        INTEGER NOT NULL DEFAULT 0,
    revoked_at       BIGINT
);

--bun:split

CREATE INDEX signin_sessions_party ON signin_sessions (party_id, created_at DESC, sid DESC);

--bun:split

-- Tokens a rotation replaced: accepted for the grace window after superseded_at.
CREATE TABLE superseded_tokens (
    jti           TEXT PRIMARY KEY,
    sid           TEXT NOT NULL REFERENCES signin_sessions (sid) ON DELETE CASCADE,
    superseded_at BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);

--bun:split

CREATE INDEX superseded_tokens_sid ON superseded_tokens (sid);

--bun:split

-- Keys the service generates on first start and keeps: JWT signing keys and the cursor MAC key.
CREATE TABLE service_keys (
    kid        TEXT PRIMARY KEY,
    purpose    TEXT NOT NULL,
    secret     {{.Bytes}} NOT NULL,
    created_at BIGINT NOT NULL
);
