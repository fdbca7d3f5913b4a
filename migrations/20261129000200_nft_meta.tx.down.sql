ALTER TABLE nft_items ADD COLUMN name TEXT NOT NULL DEFAULT '';

--bun:split

ALTER TABLE nft_items ADD COLUMN image TEXT NOT NULL DEFAULT '';

--bun:split

UPDATE nft_items SET {{if .Postgres}}name = COALESCE(meta::json->>'name', ''), image = COALESCE(meta::json->>'image', ''){{else}}name = COALESCE(json_extract(meta, '$.name'), ''), image = COALESCE(json_extract(meta, '$.image'), ''){{end}};

--bun:split

ALTER TABLE nft_items DROP COLUMN meta;

--bun:split

ALTER TABLE collection_items ADD COLUMN name TEXT NOT NULL DEFAULT '';

--bun:split

ALTER TABLE collection_items ADD COLUMN image TEXT NOT NULL DEFAULT '';

--bun:split

UPDATE collection_items SET {{if .Postgres}}name = COALESCE(meta::json->>'name', ''), image = COALESCE(meta::json->>'image', ''){{else}}name = COALESCE(json_extract(meta, '$.name'), ''), image = COALESCE(json_extract(meta, '$.image'), ''){{end}};

--bun:split

ALTER TABLE collection_items DROP COLUMN meta;
