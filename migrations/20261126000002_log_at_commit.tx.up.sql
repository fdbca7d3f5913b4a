{{if .Postgres}}
-- On PostgreSQL an update's log entry is appended where its offset is assigned: at COMMIT,
-- in assign_ledger_offset, under the offset lock, so a commit holds that lock no longer than
-- it did before the log. The transaction leaves here what the entry needs besides its offset
-- (the entry's JSON before and after the offset's digits) and, for an execute, the prepared
-- transaction to mark executed and its receipt around the log index; the commit consumes the
-- row. Rows never outlive their transaction,
-- so the table needs no crash safety of its own.
CREATE UNLOGGED TABLE log_pending (
    update_id    TEXT PRIMARY KEY,
    entry_head   BYTEA NOT NULL,
    entry_tail   BYTEA NOT NULL,
    prepared     BYTEA, -- the executed prepared transaction's hash: it is marked executed with its receipt
    receipt_head BYTEA,
    receipt_tail BYTEA,
    executed_at  BIGINT
);

--bun:split

-- log_append appends update uid, given offset o, to the log: the entry at index n (the head's
-- size), its leaf hash and the hashes of the subtrees it completes, at the stored-hash indexes
-- of Go's sumdb/tlog (RFC 6962 hashes), and the new head, whose frontier keeps the maximal
-- complete subtrees' hashes largest first.
CREATE FUNCTION log_append(uid TEXT, o BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    p     log_pending;
    n     BIGINT;
    fr    BYTEA;
    entry BYTEA;
    h     BYTEA;
    base  BIGINT := 0; -- the stored-hash index of entry n's leaf: n + n/2 + n/4 + ...
    m     BIGINT;
    lvl   INTEGER := 0;
BEGIN
    DELETE FROM log_pending WHERE update_id = uid RETURNING * INTO p;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT size, frontier INTO n, fr FROM log_head WHERE id = 1;
    entry := p.entry_head || convert_to(o::text, 'UTF8') || p.entry_tail;
    INSERT INTO log_entries (log_index, update_id, entry) VALUES (n, uid, entry);
    m := n;
    WHILE m > 0 LOOP
        base := base + m;
        m := m >> 1;
    END LOOP;
    h := sha256('\x00'::bytea || entry);
    INSERT INTO log_hashes (hash_index, hash) VALUES (base, h);
    m := n;
    WHILE m & 1 = 1 LOOP -- each trailing one of n: a complete subtree the new leaf completes
        lvl := lvl + 1;
        h := sha256('\x01'::bytea || substring(fr FROM length(fr) - 31) || h);
        fr := substring(fr FOR length(fr) - 32);
        INSERT INTO log_hashes (hash_index, hash) VALUES (base + lvl, h);
        m := m >> 1;
    END LOOP;
    UPDATE log_head SET size = n + 1, frontier = fr || h WHERE id = 1;
    IF p.prepared IS NOT NULL THEN
        UPDATE prepared_txs
        SET update_id = uid, result = p.receipt_head || convert_to(n::text, 'UTF8') || p.receipt_tail, executed_at = p.executed_at
        WHERE hash = p.prepared;
    END IF;
END
$$;

--bun:split

CREATE OR REPLACE FUNCTION assign_ledger_offset() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
BEGIN
    PERFORM pg_advisory_xact_lock(32199672997732211);
    o := nextval('ledger_offsets');
    UPDATE updates SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE nft_activity SET ledger_offset = o WHERE update_id = NEW.update_id;
    UPDATE swap_intent_views SET closed_offset = o WHERE closed_update = NEW.update_id;
    PERFORM log_append(NEW.update_id, o);
    RETURN NULL;
END
$$;
{{else}}
-- SQLite runs one writer at a time: the store appends to the log itself before COMMIT.
SELECT 1;
{{end}}
