ALTER TABLE collections DROP COLUMN sales;

--bun:split

DROP TABLE collection_days;
