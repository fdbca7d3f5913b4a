-- The admin console: its users (argon2id password hashes), its browser sessions (scs, so a
-- restart or a second instance keeps them) and the audit log of every operator action.

CREATE TABLE admin_users (
    name          TEXT PRIMARY KEY,
    role          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    disabled_at   BIGINT,
    created_at    BIGINT NOT NULL,
    password_at   BIGINT NOT NULL
);

--bun:split

CREATE TABLE admin_sessions (
    token  TEXT PRIMARY KEY,
    data   {{.Bytes}} NOT NULL,
    expiry BIGINT NOT NULL
);

--bun:split

CREATE INDEX admin_sessions_expiry ON admin_sessions (expiry);

--bun:split

CREATE TABLE admin_audit (
    id      {{if .Postgres}}BIGSERIAL PRIMARY KEY{{else}}INTEGER PRIMARY KEY AUTOINCREMENT{{end}},
    at      BIGINT NOT NULL,
    actor   TEXT NOT NULL,
    action  TEXT NOT NULL,
    target  TEXT NOT NULL,
    detail  TEXT NOT NULL,
    addr    TEXT NOT NULL
);

--bun:split

CREATE INDEX admin_audit_actor ON admin_audit (actor, id);
