DROP INDEX listings_collection;

--bun:split

CREATE INDEX listings_collection ON listings (collection_id, created_at DESC);

--bun:split

DROP INDEX listings_seller;

--bun:split

CREATE INDEX listings_seller ON listings (seller, created_at DESC);

--bun:split

DROP INDEX lp_quotes_lp;

--bun:split

CREATE INDEX lp_quotes_lp ON lp_quotes (lp, posted_at) WHERE consumed_update IS NULL;

--bun:split

DROP INDEX swap_intent_views_taker;

--bun:split

CREATE INDEX swap_intent_views_taker ON swap_intent_views (taker, status, created_at);
