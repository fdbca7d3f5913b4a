DROP INDEX signin_sessions_newest;
--bun:split
DROP INDEX prepared_txs_act_as;
--bun:split
DROP INDEX prepared_txs_prepared_at;
--bun:split
DROP INDEX lp_quotes_lp_page;
--bun:split
DROP INDEX swap_intent_views_taker_pending;
