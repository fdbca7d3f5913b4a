DROP TABLE admin_login_attempts;
