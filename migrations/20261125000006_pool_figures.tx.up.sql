-- A pool's running figures, changed in the same transaction as every LP quote, fill, cancel,
-- expiry and claim (the ledger counts each quote and fee contract it creates or archives),
-- so reading a pool's aggregates is one row however long the pool has traded. Sums of
-- remaining × price carry more fractional digits than an amount: {{.Exact}} keeps them all.
-- The pool's own terms (pairs, fee, operator) never change: they are copied here so the read
-- touches one table.
CREATE TABLE swap_pool_figures (
    pool_id      TEXT PRIMARY KEY,
    base         TEXT NOT NULL,
    quote        TEXT NOT NULL,
    fee_bps      INTEGER NOT NULL,
    operator     TEXT NOT NULL,
    pivot        {{.Exact}} NOT NULL,
    base_locked  {{.Exact}} NOT NULL,
    quote_locked {{.Exact}} NOT NULL,
    below_depth  {{.Exact}} NOT NULL,
    below_value  {{.Exact}} NOT NULL,
    above_depth  {{.Exact}} NOT NULL,
    above_value  {{.Exact}} NOT NULL,
    base_fees    {{.Exact}} NOT NULL,
    quote_fees   {{.Exact}} NOT NULL,
    lp_count     INTEGER NOT NULL
);

--bun:split

-- How many open quotes each LP has in a pool, for the pool's LP count.
CREATE TABLE swap_pool_lps (
    pool_id     TEXT NOT NULL,
    lp          TEXT NOT NULL,
    open_quotes INTEGER NOT NULL,
    PRIMARY KEY (pool_id, lp)
);
