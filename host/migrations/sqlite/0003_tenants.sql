-- Tenants: every bot belongs to the DJ whose consent made it; sessions
-- (a DJ's or the admin's) live here, hashed, so that a restart or another
-- replica honours them.

-- One row per DJ known to the host. The service names no DJ: a DJ is
-- whoever holds a session made by a consent (or a sign-in link).
CREATE TABLE djs (
    id BIGINT PRIMARY KEY,
    created_at_ms BIGINT NOT NULL
);

-- The DJ who owns the bot (NULL: made before tenants; the admin's only).
ALTER TABLE integrations ADD COLUMN dj_id BIGINT;
-- Who disabled it: 'admin' (only the admin enables it again) or 'dj'.
ALTER TABLE integrations ADD COLUMN disabled_by TEXT;
CREATE INDEX integrations_by_dj ON integrations (dj_id);

-- Sessions: the SHA-256 of the cookie's value, never the value.
-- kind 'dj' (dj_id set) or 'admin' (dj_id NULL).
CREATE TABLE sessions (
    id_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    dj_id BIGINT,
    created_at_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX sessions_by_dj ON sessions (dj_id);

-- One-time sign-in links ("sign in on another device"), hashed.
CREATE TABLE signin_links (
    code_hash TEXT PRIMARY KEY,
    dj_id BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
);

-- Unfinished consent requests are bounded per client address.
ALTER TABLE oauth_states ADD COLUMN client TEXT NOT NULL DEFAULT '';
CREATE INDEX oauth_states_by_client ON oauth_states (client, created_at_ms);
