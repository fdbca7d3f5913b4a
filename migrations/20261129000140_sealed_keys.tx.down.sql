-- Rolling back writes every secret back in plain bytes first (Store.MigrateDown), so the code
-- before reads the store as it left it.

ALTER TABLE service_keys DROP COLUMN kek_id;
