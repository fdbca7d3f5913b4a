DROP INDEX signin_sessions_open;

--bun:split

DROP INDEX swap_fills_update;

--bun:split

DROP INDEX updates_recorded_at;

--bun:split

DROP INDEX nft_activity_kind_at;

--bun:split

DROP TABLE rate_limit_refusals;
