DROP INDEX signin_sessions_newest;
--bun:split
DROP INDEX prepared_txs_act_as;
--bun:split
DROP INDEX prepared_txs_prepared_at;
