-- Never edit a migration once released: add a new file (sqlx checks each file's checksum).
-- The audit trail in the database, shared by the replicas (the JSON store
-- keeps `data_dir/audit.jsonl`).
--
-- One row per line: `line` is exactly the JSON object a line of
-- audit.jsonl holds; the columns beside it are what operators filter on.
-- `id` is the order lines were committed in: the lines of one
-- conversation are written under its claim, one replica at a time, so
-- `ORDER BY id` is their order (`at` is the writing replica's clock).
CREATE TABLE IF NOT EXISTS audit_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at timestamptz NOT NULL,
    conversation uuid NOT NULL,
    approval uuid,
    event text NOT NULL,
    line jsonb NOT NULL
);

CREATE INDEX IF NOT EXISTS audit_log_by_conversation ON audit_log (conversation, id);
CREATE INDEX IF NOT EXISTS audit_log_by_time ON audit_log (at);
CREATE INDEX IF NOT EXISTS audit_log_by_approval ON audit_log (approval) WHERE approval IS NOT NULL;
