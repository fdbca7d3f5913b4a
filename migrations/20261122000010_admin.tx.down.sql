DROP TABLE admin_audit;
--bun:split
DROP TABLE admin_sessions;
--bun:split
DROP TABLE admin_users;
