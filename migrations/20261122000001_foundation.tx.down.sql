DROP TABLE service_keys;
--bun:split
DROP TABLE superseded_tokens;
--bun:split
DROP TABLE signin_sessions;
--bun:split
DROP TABLE spent_nonces;
--bun:split
DROP TABLE prepared_txs;
--bun:split
DROP TABLE updates;
{{if .Postgres}}
--bun:split
DROP FUNCTION assign_ledger_offset;
--bun:split
DROP SEQUENCE ledger_offsets;
{{end}}
--bun:split
DROP TABLE parties;
