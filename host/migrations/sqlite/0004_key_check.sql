-- The key's check value: a known text sealed with the host's key the first
-- time a key opens this database. A key that does not open it is the wrong
-- key, said at start whatever the bots' rows hold (a damaged pair is then
-- that bot's problem alone).
CREATE TABLE key_check (
    id BIGINT PRIMARY KEY,
    sealed TEXT NOT NULL
);
