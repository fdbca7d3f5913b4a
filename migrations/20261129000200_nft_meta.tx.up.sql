-- An NFT's metadata (its name, image and whatever scalar fields its creator gives each item)
-- is one JSON object, meta, in both tables that hold it: the collection's unminted items and
-- the NFT read model. Its keys are the fields' JSON names (store/nftmeta), so a new field of
-- the metadata needs no migration; a row written before it simply lacks its key and reads as
-- the field's zero value. Nothing queries these fields in SQL: the index and the views read
-- the object whole.
ALTER TABLE collection_items ADD COLUMN meta TEXT NOT NULL DEFAULT '{}';

--bun:split

UPDATE collection_items SET meta = {{if .Postgres}}json_build_object('name', name, 'image', image)::text{{else}}json_object('name', name, 'image', image){{end}};

--bun:split

ALTER TABLE collection_items DROP COLUMN name;

--bun:split

ALTER TABLE collection_items DROP COLUMN image;

--bun:split

ALTER TABLE nft_items ADD COLUMN meta TEXT NOT NULL DEFAULT '{}';

--bun:split

UPDATE nft_items SET meta = {{if .Postgres}}json_build_object('name', name, 'image', image)::text{{else}}json_object('name', name, 'image', image){{end}};

--bun:split

ALTER TABLE nft_items DROP COLUMN name;

--bun:split

ALTER TABLE nft_items DROP COLUMN image;
