DROP TABLE log_cosignatures;
