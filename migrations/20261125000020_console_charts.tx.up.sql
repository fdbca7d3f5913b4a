-- Requests the API's rate limiter refused, per minute (store clock, Unix microseconds of the
-- minute's start) and scope (read, prepare, admin-login). Every instance adds its own counts
-- in batches, so the table is the fleet's total.
CREATE TABLE rate_limit_refusals (
    minute  BIGINT NOT NULL,
    scope   TEXT NOT NULL,
    refused BIGINT NOT NULL,
    PRIMARY KEY (minute, scope)
);

--bun:split

-- The console's charts read a time range of each: sales, the updates that filled swaps,
-- and the sessions still open.
CREATE INDEX nft_activity_kind_at ON nft_activity (kind, at);

--bun:split

CREATE INDEX updates_recorded_at ON updates (recorded_at);

--bun:split

CREATE INDEX swap_fills_update ON swap_fills (update_id);

--bun:split

CREATE INDEX signin_sessions_open ON signin_sessions (token_expires_at) WHERE revoked_at IS NULL;
