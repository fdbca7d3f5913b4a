DROP TABLE swap_pool_lps;

--bun:split

DROP TABLE swap_pool_figures;
