-- Each page of a growing list is a keyset read on an index that matches its WHERE and its
-- ORDER BY column for column, tie-breaker included: the database walks the page and no more.

-- (A taker's pending intents and an LP's open quotes get theirs in the history_keysets migration.)

-- LatestPrepared (admin console): newest prepared transactions, of everyone or of one party.
CREATE INDEX prepared_txs_prepared_at ON prepared_txs (prepared_at);

--bun:split

CREATE INDEX prepared_txs_act_as ON prepared_txs (act_as, prepared_at);

--bun:split

-- SearchSessions (admin console) without a party: every sign-in session, newest first.
CREATE INDEX signin_sessions_newest ON signin_sessions (created_at, sid);
