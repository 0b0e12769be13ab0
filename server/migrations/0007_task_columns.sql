-- Never edit a migration once released: add a new file (sqlx checks each file's checksum).
-- What A2A `ListTasks` filters and counts on without reading the
-- documents: the task's state (the v0.3 name, as the A2A doors derive it
-- from the conversation) and its context id; its status time is
-- `updated_at`. Every save of this release writes them. Rows without
-- them (saved before this migration, or by a replica of an earlier
-- release during a rolling update) are filled in from their documents by
-- the next replica that starts (`PgStore::open`).
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS task_state text;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS context_id text;

CREATE INDEX IF NOT EXISTS conversations_by_context
    ON conversations (context_id, created_at DESC, id);
CREATE INDEX IF NOT EXISTS conversations_without_task_state
    ON conversations (id) WHERE task_state IS NULL;
