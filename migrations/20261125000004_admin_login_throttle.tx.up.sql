-- The admin console's sign-in attempts, per user name and per client address, counted in the
-- store so that every instance of a fleet counts against the same budget.
CREATE TABLE admin_login_attempts (
    throttle_key TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    attempts     INTEGER NOT NULL
);
