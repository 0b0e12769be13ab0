-- Never edit a migration once released: add a new file (sqlx checks each file's checksum).
-- Several agent replicas on one database.
--
-- A conversation is changed by one replica at a time: the one holding its
-- lease (a token of its own, renewed while the turn runs). A save commits
-- only while the row's token is still the saver's, and a lease whose
-- holder stopped renewing it is taken over after `lease_until`.
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS lease_token uuid;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS lease_until timestamptz;

CREATE INDEX IF NOT EXISTS conversations_leased
    ON conversations (lease_until) WHERE lease_token IS NOT NULL;

-- What listings filter on without reading the documents: the owner and
-- whether the conversation has or had an approval (approvers read those).
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS owner text;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS had_approval boolean NOT NULL DEFAULT false;

UPDATE conversations SET
    owner = doc ->> 'owner',
    had_approval =
        jsonb_array_length(COALESCE(doc -> 'pending_approvals', '[]'::jsonb)) > 0
        OR doc -> 'pending_approval' IS NOT NULL
        OR jsonb_array_length(COALESCE(doc -> 'decisions', '[]'::jsonb)) > 0
        OR EXISTS (
            SELECT 1 FROM jsonb_array_elements(doc -> 'messages') m
            WHERE (m -> 'tool_call' ->> 'needs_approval')::boolean
        );

CREATE INDEX IF NOT EXISTS conversations_by_owner
    ON conversations (owner, created_at DESC, id);

-- Which conversation each approval uuid (pending or resolved) belongs to,
-- so that any replica finds an approval without holding every
-- conversation in memory.
CREATE TABLE IF NOT EXISTS approval_conversations (
    uuid             uuid PRIMARY KEY,
    conversation_id  uuid NOT NULL
);

INSERT INTO approval_conversations (uuid, conversation_id)
SELECT DISTINCT ON (approval) approval, id FROM (
    SELECT (p ->> 'uuid')::uuid AS approval, c.id
    FROM conversations c,
         jsonb_array_elements(COALESCE(c.doc -> 'pending_approvals', '[]'::jsonb)) p
    UNION ALL
    SELECT (c.doc -> 'pending_approval' ->> 'uuid')::uuid, c.id
    FROM conversations c
    WHERE c.doc -> 'pending_approval' ->> 'uuid' IS NOT NULL
    UNION ALL
    SELECT (m -> 'tool_call' ->> 'approval_uuid')::uuid, c.id
    FROM conversations c, jsonb_array_elements(c.doc -> 'messages') m
    WHERE m -> 'tool_call' ->> 'approval_uuid' IS NOT NULL
) found
ON CONFLICT (uuid) DO NOTHING;

-- A turn left unfinished by an agent that stopped before this migration
-- (no lease yet): give it an expired lease, so the first replica's sweep
-- records it as interrupted, as it would a replica's that died.
UPDATE conversations SET lease_token = gen_random_uuid(), lease_until = now()
WHERE (doc ->> 'turn_in_progress')::boolean AND lease_token IS NULL;

-- An agent of the previous release (one writer per database, fenced by
-- this token) may still run beside the first replicas of this one, e.g.
-- during a rolling update: bumping the token refuses its saves from now
-- on, so it can never act on a copy of an approval decided here.
UPDATE writer_epoch SET epoch = epoch + 1 WHERE id = 1;
