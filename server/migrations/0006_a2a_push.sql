-- Never edit a migration once released: add a new file (sqlx checks each file's checksum).
-- A2A push notification configs in the database, shared by the replicas
-- (the JSON store keeps `data_dir/a2a-push.json`).
--
-- One row per task with configs: `configs` is the task's list as
-- a2a-push.json holds it (tokens and credentials included: they are sent
-- with each notification; the A2A methods never show credentials).
-- `notified_*` is the last state the callbacks were sent (the task's A2A
-- state, its status message id, and how many messages that version had:
-- a conversation's messages only grow, so that orders its versions with
-- no clock involved): a replica sends a notification only if it moves
-- this mark, in one UPDATE, so each state is sent once whichever replicas
-- see it, and never after a newer one.
CREATE TABLE IF NOT EXISTS a2a_push (
    task uuid PRIMARY KEY,
    context_id text NOT NULL,
    configs jsonb NOT NULL,
    notified_state text,
    notified_message text,
    notified_messages bigint,
    updated_at timestamptz NOT NULL DEFAULT now()
);
