-- What the host remembers of each DJ's broadcasts, to plan its off-air
-- probes (the probe budget): when the last one ended (unix ms; 0: none
-- seen) and when the last few started (unix ms, comma-separated, oldest
-- first). Advisory: written by whichever replica runs the bot, unfenced.
CREATE TABLE probe_history (
    integration_id BIGINT PRIMARY KEY REFERENCES integrations (id) ON DELETE CASCADE,
    last_ended_ms BIGINT NOT NULL DEFAULT 0,
    starts TEXT NOT NULL DEFAULT ''
);
