-- The single writer's fencing token: bumped by each process that becomes
-- the writer; a save commits only while the epoch is still the saver's
-- (never edit a migration once released: add a new file).
CREATE TABLE IF NOT EXISTS writer_epoch (
    id     integer PRIMARY KEY CHECK (id = 1),
    epoch  bigint NOT NULL
);

INSERT INTO writer_epoch (id, epoch) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
