-- The service's secrets sealed at rest (store/auth_seal.go): each row of service_keys names the
-- key-encryption key its secret is sealed under, by id; empty while the secret is still in
-- plain bytes, as the code before wrote it. Migrating seals those rows once this has run.

ALTER TABLE service_keys ADD COLUMN kek_id TEXT NOT NULL DEFAULT '';
