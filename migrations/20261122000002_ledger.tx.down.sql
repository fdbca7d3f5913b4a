DROP TABLE reward_balances;
--bun:split
DROP INDEX updates_rewards;
--bun:split
ALTER TABLE updates DROP COLUMN reward;
--bun:split
DROP TABLE prepared_inputs;
--bun:split
DROP TABLE update_events;
--bun:split
DROP TABLE preapprovals;
--bun:split
DROP TABLE holdings;
