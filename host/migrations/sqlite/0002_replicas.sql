-- Several replicas over one database (PostgreSQL; SQLite has one).

-- Each integration is driven by the replica holding its lease: `lease_owner`
-- (a replica id), `lease_generation` (bumped on every take: the fencing
-- token every write of the bot names) and `lease_expires_ms` (database time,
-- renewed every few seconds by the owner).
ALTER TABLE integrations ADD COLUMN lease_owner TEXT;
ALTER TABLE integrations ADD COLUMN lease_generation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE integrations ADD COLUMN lease_expires_ms BIGINT NOT NULL DEFAULT 0;

-- Live replicas: each beats here every few seconds; the balance counts the
-- ones that beat recently.
CREATE TABLE replicas (
    id TEXT PRIMARY KEY,
    started_ms BIGINT NOT NULL,
    heartbeat_ms BIGINT NOT NULL
);

-- What the app's bots learned of its daily quota (the core's DailyQuota
-- JSON), one row per app: every bot of every replica reads it.
CREATE TABLE app_quota (
    client_id TEXT PRIMARY KEY,
    quota TEXT NOT NULL,
    updated_ms BIGINT NOT NULL
);
