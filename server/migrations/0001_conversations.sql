-- Never edit a migration once released: add a new file (sqlx checks each file's checksum).
-- Conversations of the shared PostgreSQL store: the whole conversation as
-- JSON (the same document as a JSON-store file), and the columns that
-- listings sort and filter on.
CREATE TABLE IF NOT EXISTS conversations (
    id          uuid PRIMARY KEY,
    status      text NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    doc         jsonb NOT NULL
);

CREATE INDEX IF NOT EXISTS conversations_newest ON conversations (created_at DESC, id);
CREATE INDEX IF NOT EXISTS conversations_by_status ON conversations (status, created_at DESC, id);
