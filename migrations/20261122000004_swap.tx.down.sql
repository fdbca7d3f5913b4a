DROP TABLE swap_fills;
--bun:split
DROP TABLE swap_intent_views;
--bun:split
DROP TABLE swap_intents;
--bun:split
DROP TABLE lp_fees;
--bun:split
DROP TABLE lp_quotes;
--bun:split
DROP TABLE swap_pools;
--bun:split
DROP TABLE oracle_prices;
