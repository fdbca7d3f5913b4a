-- A collection's figures by UTC day, written by the transaction of every sale (a buy, a sweep,
-- an accept) and of every write that moves the floor: the day's volume and NFTs sold, and the
-- floor as the day's last write left it (a day without a row kept the floor of the last row
-- before it). Reading 30 days of figures is 30 rows however long the collection has traded.
-- day is the UTC day's number since 1970-01-01.
CREATE TABLE collection_days (
    collection_id TEXT NOT NULL REFERENCES collections (collection_id),
    day           BIGINT NOT NULL,
    volume        {{.Decimal}} NOT NULL,
    sales         INTEGER NOT NULL,
    floor_price   {{.Decimal}},
    PRIMARY KEY (collection_id, day)
);

--bun:split

-- How many NFTs the collection ever sold; NULL until the store's migration has filled its
-- days from the history (fillCollectionDays).
ALTER TABLE collections ADD COLUMN sales INTEGER;
