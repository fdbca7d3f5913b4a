DROP TABLE witness_logs;
