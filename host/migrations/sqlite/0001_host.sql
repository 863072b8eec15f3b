-- The host's store. Written in the SQL that SQLite and PostgreSQL share
-- (BIGINT, TEXT; no AUTOINCREMENT), so a Postgres migration set can follow
-- the same shape.

-- One row per DJ's integration (a bot). `tokens` is the sealed pair
-- (XChaCha20-Poly1305, see src/crypto.rs), NULL when there is none;
-- `generation` counts every pair stored for the row and is what a save
-- compares and swaps on (a save names the generation it replaces).
CREATE TABLE integrations (
    id BIGINT PRIMARY KEY,
    label TEXT,
    enabled BIGINT NOT NULL DEFAULT 1,
    tokens TEXT,
    generation BIGINT NOT NULL DEFAULT 0,
    kit_state TEXT,
    stop_code TEXT,
    stop_message TEXT,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);

-- Each broadcast's final tally (the core's TallyJson), by liveId (0: not known).
CREATE TABLE broadcasts (
    integration_id BIGINT NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    live_id BIGINT NOT NULL,
    ended_at_ms BIGINT NOT NULL,
    tally TEXT NOT NULL,
    PRIMARY KEY (integration_id, live_id)
);

-- The last events of each broadcast, for the dashboard: at most the
-- configured number per (integration, broadcast), deduplicated by frame id
-- (an event and what the kit made of it share a frame id, not a kind).
CREATE TABLE events (
    integration_id BIGINT NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    frame_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    live_id BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    summary TEXT NOT NULL,
    detail TEXT NOT NULL,
    PRIMARY KEY (integration_id, frame_id, kind)
);
CREATE INDEX events_by_broadcast ON events (integration_id, live_id, seq);

-- Consent requests in flight (the CSRF state, hashed), single use.
CREATE TABLE oauth_states (
    state_hash TEXT PRIMARY KEY,
    integration_id BIGINT,
    created_at_ms BIGINT NOT NULL
);
