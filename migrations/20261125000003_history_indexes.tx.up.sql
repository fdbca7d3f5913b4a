-- Each page of a growing list is a keyset read on an index that matches its WHERE and its
-- ORDER BY column for column, tie-breaker included: the database walks the page and no more.

-- ActiveIntents: a taker's pending intents, newest first (created_at, intent_cid).
CREATE INDEX swap_intent_views_taker_pending ON swap_intent_views (taker, created_at, intent_cid) WHERE status = 'pending';

--bun:split

-- ActiveLPQuotes: an LP's open quotes, newest first (posted_at, quote_id).
CREATE INDEX lp_quotes_lp_page ON lp_quotes (lp, posted_at, quote_id) WHERE consumed_update IS NULL;

--bun:split

-- LatestPrepared (admin console): newest prepared transactions, of everyone or of one party.
CREATE INDEX prepared_txs_prepared_at ON prepared_txs (prepared_at);

--bun:split

CREATE INDEX prepared_txs_act_as ON prepared_txs (act_as, prepared_at);

--bun:split

-- SearchSessions (admin console) without a party: every sign-in session, newest first.
CREATE INDEX signin_sessions_newest ON signin_sessions (created_at, sid);
