//! The host's store: every integration (a DJ's bot) with its sealed token
//! pair and its kit state, each broadcast's final tally, a bounded event
//! log per broadcast, and consent requests in flight. One module over
//! sqlx's `Any` driver with `$n` placeholders and SQL that SQLite and
//! PostgreSQL share, so the same code serves both; migrations are embedded
//! (`migrations/sqlite`, valid on both).
//!
//! Several replicas may share one PostgreSQL database: each integration is
//! driven by the replica holding its **lease** (a row's `lease_owner`,
//! `lease_generation`, `lease_expires_ms` in database time), and every
//! write a bot makes names its lease generation (**fencing**): a replica
//! whose lease was taken over writes nothing more and learns so
//! ([`StoreError::Fenced`]).
//!
//! Token pairs are sealed before they reach the database
//! ([`crate::crypto`]) and every save is a compare-and-swap on the row's
//! `generation` (the count of pairs stored for it): a save names the
//! generation it replaces, and is refused when another writer got there
//! first.

use std::str::FromStr;
use std::time::Duration;

use onair::kit::KitState;
use onair::proto::quota::DailyQuota;
use onair::Tokens;
use sha2::{Digest, Sha256};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Row};

use crate::crypto::{OpenError, TokenCipher};

/// Why the store failed. Its text names no secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database refused or could not be reached.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// A migration failed.
    #[error("database migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A sealed pair does not open with the configured key.
    #[error("bot {id}: {source}")]
    Open {
        /// The bot.
        id: i64,
        /// Why.
        source: OpenError,
    },
    /// The bot's lease is no longer this replica's (another took it over):
    /// nothing was written, and the bot must stop here.
    #[error("bot {id}: the lease is held by another replica")]
    Fenced {
        /// The bot.
        id: i64,
    },
    /// A stored value this version does not read.
    #[error("bot {id}: stored {what} not readable: {message}")]
    Corrupt {
        /// The bot.
        id: i64,
        /// Which value.
        what: &'static str,
        /// Why (no secret in it).
        message: String,
    },
}

/// One integration as stored, the pair opened.
#[derive(Debug, Clone)]
pub struct Integration {
    /// The bot's id.
    pub id: i64,
    /// What the dashboard calls it (the DJ's nickname once seen).
    pub label: Option<String>,
    /// Whether it runs.
    pub enabled: bool,
    /// The pair, when there is one.
    pub tokens: Option<Tokens>,
    /// Pairs stored for this row so far (the compare-and-swap value).
    pub generation: i64,
    /// The kit's memory.
    pub kit_state: Option<KitState>,
    /// Why it stopped, when it did: the core's stop code and message.
    pub stop: Option<(String, String)>,
    /// When it was connected first (unix ms).
    pub created_at_ms: i64,
}

/// A broadcast's final tally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BroadcastRow {
    /// Its `liveId` (0: not known).
    pub live_id: i64,
    /// When its end was read (unix ms).
    pub ended_at_ms: i64,
    /// The tally as the core's `TallyJson`.
    pub tally: String,
}

/// One line of the event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRow {
    /// The bot.
    pub integration_id: i64,
    /// The frame's id (or a made-up unique one for frames without).
    pub frame_id: String,
    /// `chat`, `presence`, `like`, `donation`, `end`, `arrival`, `command`,
    /// `milestone`, `ended`.
    pub kind: String,
    /// The broadcast (0: not known).
    pub live_id: i64,
    /// Order of arrival.
    pub seq: i64,
    /// When (unix ms).
    pub at_ms: i64,
    /// One line for people.
    pub summary: String,
    /// JSON for programs.
    pub detail: String,
    /// The writer's lease generation (not stored: the fence).
    pub lease: i64,
}

/// The SQL dialect under sqlx's `Any` driver: the few places the two differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite (one writer, one replica).
    Sqlite,
    /// PostgreSQL (any number of replicas).
    Postgres,
}

impl Dialect {
    /// The database's clock, unix ms (leases never use a replica's clock).
    fn now_ms(self) -> &'static str {
        match self {
            Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS BIGINT)",
            Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
        }
    }

    /// Row locks that other replicas skip (SQLite has one writer).
    fn skip_locked(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => "FOR UPDATE SKIP LOCKED",
        }
    }

    fn lock_row(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => "FOR UPDATE",
        }
    }
}

/// A lease: the bot and the generation its writes are fenced with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The bot.
    pub id: i64,
    /// The lease's generation (bumped on every take).
    pub generation: i64,
    /// Whether the bot is enabled (a renewal reports it: an admin on another
    /// replica may have disabled it).
    pub enabled: bool,
}

/// What a refresh gate reads: the stored row and how long this replica's
/// lease on it has left (database time; `None`: not this replica's lease).
#[derive(Debug)]
pub struct GateRead {
    /// The row's token generation.
    pub generation: i64,
    /// The stored pair.
    pub tokens: Option<Tokens>,
    /// Milliseconds left on this replica's lease of that generation.
    pub lease_left_ms: Option<i64>,
}

/// The store. Its `Debug` names the replica and the dialect only (the pool's
/// options hold the database URL, which may hold a password).
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    cipher: TokenCipher,
    dialect: Dialect,
    replica: std::sync::Arc<str>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dialect", &self.dialect)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

fn row_aad(id: i64) -> Vec<u8> {
    format!("onair-host:integration:{id}").into_bytes()
}

/// The stored form of a consent state: its SHA-256, hex.
fn state_hash(state: &str) -> String {
    Sha256::digest(state.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Store {
    /// Connects to `url` (`sqlite://…?mode=rwc` or `postgres://…`), applies
    /// the migrations. The process is one replica, with a fresh random id.
    pub async fn open(url: &str, cipher: TokenCipher) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let options = AnyConnectOptions::from_str(url)?;
        let sqlite = url.starts_with("sqlite:");
        let replica: String = {
            use rand::RngExt;
            let bytes: [u8; 8] = rand::rng().random();
            bytes.iter().map(|b| format!("{b:02x}")).collect()
        };
        let pool = AnyPoolOptions::new()
            // SQLite has one writer: one connection serializes writes
            // instead of failing them with SQLITE_BUSY.
            .max_connections(if sqlite { 1 } else { 10 })
            // A replica cut from its database must notice in seconds, not
            // hang its lease keeper.
            .acquire_timeout(Duration::from_secs(if sqlite { 30 } else { 3 }))
            // No ping before each statement (a round trip each): sqlx pings
            // every connection it takes back already.
            .test_before_acquire(sqlite)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if sqlite {
                        for pragma in [
                            "PRAGMA journal_mode = WAL",
                            "PRAGMA synchronous = NORMAL",
                            "PRAGMA foreign_keys = ON",
                            "PRAGMA busy_timeout = 10000",
                        ] {
                            sqlx::query(pragma).execute(&mut *conn).await?;
                        }
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(Store {
            pool,
            cipher,
            dialect: if sqlite {
                Dialect::Sqlite
            } else {
                Dialect::Postgres
            },
            replica: replica.into(),
        })
    }

    /// This replica's id (random per process).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// The database's dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Closes the pool (after the last write).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Row `id`'s sealed pair opened (bound to its row) and read.
    fn open_tokens(&self, id: i64, sealed: Option<String>) -> Result<Option<Tokens>, StoreError> {
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let plain = self
            .cipher
            .open(&sealed, &row_aad(id))
            .map_err(|source| StoreError::Open { id, source })?;
        Tokens::from_json(&plain)
            .map(Some)
            .map_err(|e| StoreError::Corrupt {
                id,
                what: "tokens",
                message: e.to_string(),
            })
    }

    fn integration_from(&self, row: &sqlx::any::AnyRow) -> Result<Integration, StoreError> {
        let id: i64 = row.try_get("id")?;
        let tokens = self.open_tokens(id, row.try_get("tokens")?)?;
        let state: Option<String> = row.try_get("kit_state")?;
        let kit_state = match state {
            Some(s) => Some(KitState::from_json(s).map_err(|e| StoreError::Corrupt {
                id,
                what: "kit state",
                message: e.to_string(),
            })?),
            None => None,
        };
        let code: Option<String> = row.try_get("stop_code")?;
        let message: Option<String> = row.try_get("stop_message")?;
        Ok(Integration {
            id,
            label: row.try_get("label")?,
            enabled: row.try_get::<i64, _>("enabled")? != 0,
            tokens,
            generation: row.try_get("generation")?,
            kit_state,
            stop: code.map(|c| (c, message.unwrap_or_default())),
            created_at_ms: row.try_get("created_at_ms")?,
        })
    }

    const COLUMNS: &'static str = "id, label, enabled, tokens, generation, kit_state, \
        stop_code, stop_message, created_at_ms";

    /// Every integration, by id.
    pub async fn integrations(&self) -> Result<Vec<Integration>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {} FROM integrations ORDER BY id",
            Self::COLUMNS
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| self.integration_from(r)).collect()
    }

    /// One integration.
    pub async fn integration(&self, id: i64) -> Result<Option<Integration>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {} FROM integrations WHERE id = $1",
            Self::COLUMNS
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(|r| self.integration_from(r)).transpose()
    }

    /// A new integration, enabled, without tokens yet, its lease this
    /// replica's (for `ttl_ms`); its id (the lease's generation is 1).
    pub async fn create_integration(&self, now_ms: i64) -> Result<i64, StoreError> {
        self.create_integration_leased(now_ms, 15_000).await
    }

    /// [`create_integration`](Self::create_integration) with the lease's length.
    pub async fn create_integration_leased(
        &self,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<i64, StoreError> {
        let sql = format!(
            "INSERT INTO integrations (id, enabled, generation, created_at_ms, updated_at_ms, \
             lease_owner, lease_generation, lease_expires_ms) \
             SELECT COALESCE(MAX(id), 0) + 1, 1, 0, $1, $1, $2, 1, {} + $3 FROM integrations \
             RETURNING id",
            self.dialect.now_ms()
        );
        // Two replicas creating at once pick the same id: one retries.
        let mut tries = 0;
        loop {
            let done = sqlx::query(&sql)
                .bind(now_ms)
                .bind(self.replica.to_string())
                .bind(ttl_ms)
                .fetch_one(&self.pool)
                .await;
            match done {
                Ok(row) => return Ok(row.try_get(0)?),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() && tries < 10 => {
                    tries += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Stores `tokens` sealed, replacing generation `expected`, fenced by
    /// `lease` (this replica's lease generation): the new generation, or
    /// `None` when the row is at another generation (another writer stored a
    /// pair since; nothing changed); [`StoreError::Fenced`] when the lease is
    /// another replica's. One round trip when it goes through.
    pub async fn save_tokens(
        &self,
        id: i64,
        tokens: &Tokens,
        expected: i64,
        lease: i64,
        now_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        let sealed = self.cipher.seal(tokens.to_json().as_bytes(), &row_aad(id));
        self.swap_tokens(id, Some(sealed), expected, lease, now_ms)
            .await
    }

    /// Forgets the pair (after a revocation), as [`save_tokens`](Self::save_tokens) does.
    pub async fn clear_tokens(
        &self,
        id: i64,
        expected: i64,
        lease: i64,
        now_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        self.swap_tokens(id, None, expected, lease, now_ms).await
    }

    async fn swap_tokens(
        &self,
        id: i64,
        sealed: Option<String>,
        expected: i64,
        lease: i64,
        now_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        let done = sqlx::query(
            "UPDATE integrations SET tokens = $1, generation = generation + 1, updated_at_ms = $2 \
             WHERE id = $3 AND generation = $4 AND lease_owner = $5 AND lease_generation = $6",
        )
        .bind(sealed)
        .bind(now_ms)
        .bind(id)
        .bind(expected)
        .bind(self.replica.to_string())
        .bind(lease)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(Some(expected + 1));
        }
        // Which condition failed: the lease (stop) or the generation (re-read).
        self.check_lease(id, lease).await?;
        Ok(None)
    }

    /// `Ok` when `lease` is this replica's lease of `id`, else
    /// [`StoreError::Fenced`].
    pub async fn check_lease(&self, id: i64, lease: i64) -> Result<(), StoreError> {
        let row = sqlx::query(
            "SELECT 1 FROM integrations WHERE id = $1 AND lease_owner = $2 AND lease_generation = $3",
        )
        .bind(id)
        .bind(self.replica.to_string())
        .bind(lease)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|_| ()).ok_or(StoreError::Fenced { id })
    }

    /// A fenced update of one integration's row: `sql` ends with
    /// `WHERE id = $k` and the lease condition is appended.
    async fn fenced_update(
        &self,
        id: i64,
        lease: i64,
        sql: &str,
        binds: Vec<Option<String>>,
        numbers: Vec<i64>,
    ) -> Result<(), StoreError> {
        let n = binds.len() + numbers.len();
        let sql = format!(
            "{sql} = ${} AND lease_owner = ${} AND lease_generation = ${}",
            n + 1,
            n + 2,
            n + 3
        );
        let mut query = sqlx::query(&sql);
        for b in binds {
            query = query.bind(b);
        }
        for v in numbers {
            query = query.bind(v);
        }
        let done = query
            .bind(id)
            .bind(self.replica.to_string())
            .bind(lease)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Fenced { id });
        }
        Ok(())
    }

    /// Saves the kit's memory (fenced by `lease`).
    pub async fn save_state(
        &self,
        id: i64,
        state: &KitState,
        lease: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.fenced_update(
            id,
            lease,
            "UPDATE integrations SET kit_state = $1, updated_at_ms = $2 WHERE id",
            vec![Some(state.to_json().to_owned())],
            vec![now_ms],
        )
        .await
    }

    /// Runs or parks the bot.
    pub async fn set_enabled(&self, id: i64, enabled: bool, now_ms: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE integrations SET enabled = $1, updated_at_ms = $2 WHERE id = $3")
            .bind(i64::from(enabled))
            .bind(now_ms)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records why the bot stopped (`None`: it runs); fenced by `lease`.
    pub async fn set_stop(
        &self,
        id: i64,
        stop: Option<(&str, &str)>,
        lease: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.fenced_update(
            id,
            lease,
            "UPDATE integrations SET stop_code = $1, stop_message = $2, updated_at_ms = $3 WHERE id",
            vec![stop.map(|s| s.0.to_owned()), stop.map(|s| s.1.to_owned())],
            vec![now_ms],
        )
        .await
    }

    /// Names the bot on the dashboard; fenced by `lease`.
    pub async fn set_label(&self, id: i64, label: &str, lease: i64) -> Result<(), StoreError> {
        self.fenced_update(
            id,
            lease,
            "UPDATE integrations SET label = $1 WHERE id",
            vec![Some(label.to_owned())],
            vec![],
        )
        .await
    }

    /// Saves a broadcast's final tally (a later one for the same liveId
    /// wins); fenced by `lease`.
    pub async fn save_broadcast(
        &self,
        id: i64,
        b: &BroadcastRow,
        lease: i64,
    ) -> Result<(), StoreError> {
        // SQLite needs the WHERE to read ON CONFLICT as the upsert's.
        let done = sqlx::query(
            "INSERT INTO broadcasts (integration_id, live_id, ended_at_ms, tally) \
             SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM integrations \
             WHERE id = $1 AND lease_owner = $5 AND lease_generation = $6) \
             ON CONFLICT (integration_id, live_id) \
             DO UPDATE SET ended_at_ms = excluded.ended_at_ms, tally = excluded.tally",
        )
        .bind(id)
        .bind(b.live_id)
        .bind(b.ended_at_ms)
        .bind(b.tally.clone())
        .bind(self.replica.to_string())
        .bind(lease)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Fenced { id });
        }
        Ok(())
    }

    /// The bot's ended broadcasts, in the order they ended.
    pub async fn broadcasts(&self, id: i64) -> Result<Vec<BroadcastRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT live_id, ended_at_ms, tally FROM broadcasts WHERE integration_id = $1 \
             ORDER BY ended_at_ms, live_id",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(BroadcastRow {
                    live_id: r.try_get(0)?,
                    ended_at_ms: r.try_get(1)?,
                    tally: r.try_get(2)?,
                })
            })
            .collect()
    }

    /// Appends log rows, 64 to a statement and a transaction; a row whose
    /// (bot, frame id, kind) is there already is left out, and so is a row
    /// whose lease (`LogRow::lease`) is no longer this replica's (fencing).
    pub async fn insert_events(&self, rows: &[LogRow]) -> Result<(), StoreError> {
        /// Rows per statement (9 parameters each, far under SQLite's limit).
        const PER_STATEMENT: usize = 64;
        // One short transaction per statement: the bots' own saves (kit
        // state, tokens) wait for the one connection between them, not for
        // the whole batch.
        for chunk in rows.chunks(PER_STATEMENT) {
            let mut tx = self.pool.begin().await?;
            let owner = chunk.len() * 9 + 1;
            let values: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let p: Vec<String> = (1..=9).map(|k| format!("${}", i * 9 + k)).collect();
                    format!("({})", p.join(", "))
                })
                .collect();
            // The VALUES' columns are column1…column9 on both engines; the
            // WHERE lets SQLite read ON CONFLICT as the upsert's.
            let sql = format!(
                "INSERT INTO events (integration_id, frame_id, kind, live_id, seq, at_ms, summary, detail) \
                 SELECT v.column1, v.column2, v.column3, v.column4, v.column5, v.column6, v.column7, v.column8 \
                 FROM (VALUES {}) AS v JOIN integrations i ON i.id = v.column1 \
                 AND i.lease_generation = v.column9 AND i.lease_owner = ${owner} \
                 WHERE true ON CONFLICT DO NOTHING",
                values.join(", ")
            );
            let mut query = sqlx::query(&sql);
            for r in chunk {
                query = query
                    .bind(r.integration_id)
                    .bind(r.frame_id.clone())
                    .bind(r.kind.clone())
                    .bind(r.live_id)
                    .bind(r.seq)
                    .bind(r.at_ms)
                    .bind(r.summary.clone())
                    .bind(r.detail.clone())
                    .bind(r.lease);
            }
            query = query.bind(self.replica.to_string());
            query.execute(&mut *tx).await?;
            tx.commit().await?;
        }
        Ok(())
    }

    /// Keeps only the newest `keep` rows of one broadcast's log.
    pub async fn prune_events(&self, id: i64, live_id: i64, keep: u32) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM events WHERE integration_id = $1 AND live_id = $2 AND seq < \
             (SELECT seq FROM events WHERE integration_id = $1 AND live_id = $2 \
              ORDER BY seq DESC LIMIT 1 OFFSET $3)",
        )
        .bind(id)
        .bind(live_id)
        .bind(i64::from(keep.saturating_sub(1)))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// The newest `limit` log rows of a bot (of one broadcast, when given),
    /// newest first.
    pub async fn events(
        &self,
        id: i64,
        live_id: Option<i64>,
        kind: Option<&str>,
        limit: i64,
    ) -> Result<Vec<LogRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT integration_id, frame_id, kind, live_id, seq, at_ms, summary, detail \
             FROM events WHERE integration_id = $1 AND ($2 < 0 OR live_id = $2) \
             AND ($3 = '' OR kind = $3) ORDER BY seq DESC LIMIT $4",
        )
        .bind(id)
        .bind(live_id.unwrap_or(-1))
        .bind(kind.unwrap_or("").to_owned())
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(LogRow {
                    integration_id: r.try_get(0)?,
                    frame_id: r.try_get(1)?,
                    kind: r.try_get(2)?,
                    live_id: r.try_get(3)?,
                    seq: r.try_get(4)?,
                    at_ms: r.try_get(5)?,
                    summary: r.try_get(6)?,
                    detail: r.try_get(7)?,
                    lease: 0,
                })
            })
            .collect()
    }

    /// The highest log sequence number stored (0 when none).
    pub async fn last_seq(&self) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM events")
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get(0)?)
    }

    /// Remembers a consent request (`bot`: a re-connect of that bot).
    pub async fn put_consent_state(
        &self,
        state: &str,
        bot: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO oauth_states (state_hash, integration_id, created_at_ms) VALUES ($1, $2, $3)",
        )
        .bind(state_hash(state))
        .bind(bot)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        // Forget abandoned ones (an hour old).
        sqlx::query("DELETE FROM oauth_states WHERE created_at_ms < $1")
            .bind(now_ms - 3_600_000)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes a consent request back, once: `Some(bot)` when it was there
    /// and made after `since_ms` (it is gone after this either way).
    pub async fn take_consent_state(
        &self,
        state: &str,
        since_ms: i64,
    ) -> Result<Option<Option<i64>>, StoreError> {
        let row = sqlx::query(
            "DELETE FROM oauth_states WHERE state_hash = $1 RETURNING integration_id, created_at_ms",
        )
        .bind(state_hash(state))
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let created: i64 = row.try_get(1)?;
        if created < since_ms {
            return Ok(None);
        }
        Ok(Some(row.try_get(0)?))
    }

    // ---- Replicas and leases ----

    /// Beats this replica's row; the replicas that beat within `alive_ms`
    /// (this one included), by id, and how many bots there are to run
    /// (enabled, with a pair).
    pub async fn heartbeat(&self, alive_ms: i64) -> Result<(Vec<String>, i64), StoreError> {
        let now = self.dialect.now_ms();
        sqlx::query(&format!(
            "INSERT INTO replicas (id, started_ms, heartbeat_ms) VALUES ($1, {now}, {now}) \
             ON CONFLICT (id) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms"
        ))
        .bind(self.replica.to_string())
        .execute(&self.pool)
        .await?;
        let live = sqlx::query(&format!(
            "SELECT id FROM replicas WHERE heartbeat_ms > {now} - $1 ORDER BY id"
        ))
        .bind(alive_ms)
        .fetch_all(&self.pool)
        .await?;
        let live = live
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<Vec<String>, _>>()?;
        let row = sqlx::query(
            "SELECT COUNT(*) FROM integrations WHERE enabled = 1 AND tokens IS NOT NULL",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok((live, row.try_get(0)?))
    }

    /// The highest integration id (0: none yet).
    pub async fn max_integration_id(&self) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT COALESCE(MAX(id), 0) FROM integrations")
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get(0)?)
    }

    /// This replica leaves: its row goes and its leases are released (the
    /// others take its bots at once).
    pub async fn leave(&self) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE integrations SET lease_owner = NULL, lease_expires_ms = 0 WHERE lease_owner = $1",
        )
        .bind(self.replica.to_string())
        .execute(&self.pool)
        .await?;
        sqlx::query("DELETE FROM replicas WHERE id = $1")
            .bind(self.replica.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    fn leases_from(rows: &[sqlx::any::AnyRow]) -> Result<Vec<Lease>, StoreError> {
        rows.iter()
            .map(|r| {
                Ok(Lease {
                    id: r.try_get(0)?,
                    generation: r.try_get(1)?,
                    enabled: r.try_get::<i64, _>(2)? != 0,
                })
            })
            .collect()
    }

    /// Renews every lease this replica holds for `ttl_ms` more (one
    /// statement); the leases it still holds.
    pub async fn renew_leases(&self, ttl_ms: i64) -> Result<Vec<Lease>, StoreError> {
        let rows = sqlx::query(&format!(
            "UPDATE integrations SET lease_expires_ms = {} + $1 WHERE lease_owner = $2 \
             RETURNING id, lease_generation, enabled",
            self.dialect.now_ms()
        ))
        .bind(ttl_ms)
        .bind(self.replica.to_string())
        .fetch_all(&self.pool)
        .await?;
        Self::leases_from(&rows)
    }

    /// Takes at most `count` bots to run whose lease is free or expired
    /// (rows another replica is taking at the same instant are skipped).
    pub async fn take_leases(&self, count: i64, ttl_ms: i64) -> Result<Vec<Lease>, StoreError> {
        if count <= 0 {
            return Ok(Vec::new());
        }
        let now = self.dialect.now_ms();
        let free = format!(
            "enabled = 1 AND tokens IS NOT NULL AND (lease_owner IS NULL OR lease_expires_ms < {now})"
        );
        let rows = sqlx::query(&format!(
            "UPDATE integrations SET lease_owner = $1, lease_generation = lease_generation + 1, \
             lease_expires_ms = {now} + $2 WHERE {free} AND id IN \
             (SELECT id FROM integrations WHERE {free} ORDER BY id LIMIT $3 {}) \
             RETURNING id, lease_generation, enabled",
            self.dialect.skip_locked()
        ))
        .bind(self.replica.to_string())
        .bind(ttl_ms)
        .bind(count)
        .fetch_all(&self.pool)
        .await?;
        Self::leases_from(&rows)
    }

    /// Takes bot `id`'s lease whoever holds it (a DJ re-connects through
    /// this replica; the holder's writes are fenced from now on); its
    /// generation.
    pub async fn steal_lease(&self, id: i64, ttl_ms: i64) -> Result<Option<i64>, StoreError> {
        let row = sqlx::query(&format!(
            "UPDATE integrations SET lease_owner = $1, lease_generation = lease_generation + 1, \
             lease_expires_ms = {} + $2 WHERE id = $3 RETURNING lease_generation",
            self.dialect.now_ms()
        ))
        .bind(self.replica.to_string())
        .bind(ttl_ms)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| r.try_get(0)).transpose().map_err(Into::into)
    }

    /// Gives a lease up (the bot was closed here): another replica takes it
    /// at its next look.
    pub async fn release_lease(&self, id: i64, lease: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE integrations SET lease_owner = NULL, lease_expires_ms = 0 \
             WHERE id = $1 AND lease_owner = $2 AND lease_generation = $3",
        )
        .bind(id)
        .bind(self.replica.to_string())
        .bind(lease)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// What a refresh gate needs, in one statement: the stored pair and its
    /// generation, and how long this replica's lease `lease` has left.
    pub async fn gate_read(&self, id: i64, lease: i64) -> Result<GateRead, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT generation, tokens, CASE WHEN lease_owner = $2 AND lease_generation = $3 \
             THEN lease_expires_ms - {} ELSE -1 END FROM integrations WHERE id = $1",
            self.dialect.now_ms()
        ))
        .bind(id)
        .bind(self.replica.to_string())
        .bind(lease)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Err(StoreError::Fenced { id });
        };
        let tokens = self.open_tokens(id, row.try_get(1)?)?;
        let left: i64 = row.try_get(2)?;
        Ok(GateRead {
            generation: row.try_get(0)?,
            tokens,
            lease_left_ms: (left >= 0).then_some(left),
        })
    }

    /// Who drives each bot: (bot, replica) for every lease held now.
    pub async fn lease_owners(&self) -> Result<Vec<(i64, String)>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT id, lease_owner FROM integrations WHERE lease_owner IS NOT NULL \
             AND lease_expires_ms > {} ORDER BY id",
            self.dialect.now_ms()
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }

    // ---- The app's daily quota ----

    /// The app's daily quota as the store knows it.
    pub async fn app_quota(&self, client_id: &str) -> Result<DailyQuota, StoreError> {
        let row = sqlx::query("SELECT quota FROM app_quota WHERE client_id = $1")
            .bind(client_id.to_owned())
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => {
                let text: String = row.try_get(0)?;
                serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                    id: 0,
                    what: "daily quota",
                    message: e.to_string(),
                })
            }
            None => Ok(DailyQuota::default()),
        }
    }

    /// Folds what this replica's bots learned into the app's row, in one
    /// transaction (the row locked on PostgreSQL); the app's quota after.
    pub async fn merge_app_quota(
        &self,
        client_id: &str,
        learned: &DailyQuota,
        now_ms: i64,
    ) -> Result<DailyQuota, StoreError> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(&format!(
            "SELECT quota FROM app_quota WHERE client_id = $1 {}",
            self.dialect.lock_row()
        ))
        .bind(client_id.to_owned())
        .fetch_optional(&mut *tx)
        .await?;
        let mut app = match row {
            Some(row) => {
                let text: String = row.try_get(0)?;
                serde_json::from_str(&text).unwrap_or_default()
            }
            None => DailyQuota::default(),
        };
        let u_now = u64::try_from(now_ms).unwrap_or(0);
        merge_quota(&mut app, learned, u_now);
        let text = serde_json::to_string(&app).map_err(|e| StoreError::Corrupt {
            id: 0,
            what: "daily quota",
            message: e.to_string(),
        })?;
        sqlx::query(
            "INSERT INTO app_quota (client_id, quota, updated_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (client_id) DO UPDATE SET quota = excluded.quota, updated_ms = excluded.updated_ms",
        )
        .bind(client_id.to_owned())
        .bind(text)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(app)
    }
}

/// Folds `learned` into `app` (the app's daily quota): the later reset wins
/// with its count, the same reset keeps the lower count, blocks are merged
/// by scope (the later end wins) and ended ones dropped. `true` when `app`
/// changed.
pub fn merge_quota(app: &mut DailyQuota, learned: &DailyQuota, now_ms: u64) -> bool {
    let before = app.clone();
    match (learned.reset_ms, app.reset_ms) {
        (Some(new), Some(old)) if new > old => {
            app.reset_ms = Some(new);
            app.remaining = learned.remaining;
        }
        (Some(new), Some(old)) if new == old => {
            app.remaining = match (app.remaining, learned.remaining) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        (Some(new), None) => {
            app.reset_ms = Some(new);
            app.remaining = learned.remaining;
        }
        _ => {}
    }
    if app.reset_ms.is_some_and(|r| r <= now_ms) {
        app.reset_ms = None;
        app.remaining = None;
    }
    for block in &learned.blocks {
        match app.blocks.iter_mut().find(|b| b.scope == block.scope) {
            Some(b) => b.until_ms = b.until_ms.max(block.until_ms),
            None => app.blocks.push(block.clone()),
        }
    }
    app.blocks.retain(|b| b.until_ms > now_ms);
    *app != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdb::{on_both, Db};

    fn tokens(generation: u64) -> Tokens {
        let json = format!(
            r#"{{"format":"onair.tokens","version":1,"generation":{generation},
            "access_token":"at_SECRET{generation}","access_expires_at_ms":5000,"issued_at_ms":1000,
            "refresh_token":"rt_SECRET{generation}","refresh_expires_at_ms":90000,"scope":"live.read"}}"#
        );
        Tokens::from_json(json.as_bytes()).unwrap()
    }

    on_both!(
        tokens_cas,
        tokens_are_sealed_at_rest_and_saved_by_compare_and_swap
    );
    async fn tokens_are_sealed_at_rest_and_saved_by_compare_and_swap(db: &Db) {
        let store = db.store().await;
        let id = store.create_integration(10).await.unwrap();
        assert_eq!(store.create_integration(11).await.unwrap(), id + 1);
        // A new integration's lease is its creator's, generation 1.
        assert_eq!(
            store.save_tokens(id, &tokens(1), 0, 1, 20).await.unwrap(),
            Some(1)
        );
        // A writer that read generation 0 lost the race: nothing changes.
        assert_eq!(
            store.save_tokens(id, &tokens(9), 0, 1, 21).await.unwrap(),
            None
        );
        assert_eq!(
            store.save_tokens(id, &tokens(2), 1, 1, 22).await.unwrap(),
            Some(2)
        );
        let row = store.integration(id).await.unwrap().unwrap();
        assert_eq!(row.generation, 2);
        assert_eq!(row.tokens.unwrap().generation(), 2);
        assert!(row.enabled);
        let stored = sqlx::query("SELECT tokens FROM integrations")
            .fetch_all(&store.pool)
            .await
            .unwrap();
        for r in stored {
            let text: Option<String> = r.try_get(0).unwrap();
            assert!(
                !text.unwrap_or_default().contains("SECRET"),
                "a token in the clear"
            );
        }
        store.close().await;
        if let Db::Sqlite(_) = db {
            let path = db
                .url()
                .trim_start_matches("sqlite://")
                .trim_end_matches("?mode=rwc");
            let dir = std::path::Path::new(path).parent().unwrap();
            let mut bytes = Vec::new();
            for entry in std::fs::read_dir(dir).unwrap() {
                bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
            }
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains("SECRET"), "a token in the database files");
        }
    }

    on_both!(other_row, a_pair_sealed_for_another_row_does_not_open);
    async fn a_pair_sealed_for_another_row_does_not_open(db: &Db) {
        let store = db.store().await;
        let a = store.create_integration(1).await.unwrap();
        let b = store.create_integration(1).await.unwrap();
        store.save_tokens(a, &tokens(1), 0, 1, 2).await.unwrap();
        sqlx::query("UPDATE integrations SET tokens = (SELECT tokens FROM integrations WHERE id = $1) WHERE id = $2")
            .bind(a)
            .bind(b)
            .execute(&store.pool)
            .await
            .unwrap();
        let err = store.integration(b).await.unwrap_err();
        assert!(matches!(err, StoreError::Open { .. }), "{err}");
        assert!(!err.to_string().contains("SECRET"));
    }

    on_both!(
        event_log,
        the_event_log_is_deduplicated_by_frame_and_bounded_per_broadcast
    );
    async fn the_event_log_is_deduplicated_by_frame_and_bounded_per_broadcast(db: &Db) {
        let store = db.store().await;
        let id = store.create_integration(1).await.unwrap();
        let row = |seq: i64, frame: &str, kind: &str, live: i64| LogRow {
            integration_id: id,
            frame_id: frame.to_owned(),
            kind: kind.to_owned(),
            live_id: live,
            seq,
            at_ms: seq,
            summary: format!("#{seq}"),
            detail: "{}".to_owned(),
            lease: 1,
        };
        // A batch larger than one statement.
        let many: Vec<LogRow> = (1000..1150)
            .map(|i| row(i, &format!("m{i}"), "chat", 9))
            .collect();
        store.insert_events(&many).await.unwrap();
        assert_eq!(
            store.events(id, Some(9), None, 1000).await.unwrap().len(),
            150
        );
        assert_eq!(store.last_seq().await.unwrap(), 1149);
        assert_eq!(store.prune_events(id, 9, 1).await.unwrap(), 149);
        assert_eq!(
            store.events(id, Some(9), None, 1000).await.unwrap()[0].seq,
            1149
        );
        sqlx::query("DELETE FROM events")
            .execute(&store.pool)
            .await
            .unwrap();
        let rows: Vec<LogRow> = (1..=30)
            .map(|i| row(i, &format!("f{i}"), "chat", 7))
            .collect();
        store.insert_events(&rows).await.unwrap();
        // The same frames again (a replay) and the kit's arrival of one of them.
        store.insert_events(&rows[..5]).await.unwrap();
        store
            .insert_events(&[row(31, "f30", "arrival", 7), row(32, "g1", "chat", 8)])
            .await
            .unwrap();
        assert_eq!(
            store.events(id, Some(7), None, 100).await.unwrap().len(),
            31
        );
        assert_eq!(store.prune_events(id, 7, 10).await.unwrap(), 21);
        let kept = store.events(id, Some(7), None, 100).await.unwrap();
        assert_eq!(kept.len(), 10);
        assert_eq!(kept[0].seq, 31, "newest first");
        assert_eq!(kept[9].seq, 22);
        assert_eq!(
            store.events(id, None, None, 100).await.unwrap().len(),
            11,
            "broadcast 8 untouched"
        );
        assert_eq!(store.prune_events(id, 8, 10).await.unwrap(), 0);
        let arrivals = store.events(id, None, Some("arrival"), 100).await.unwrap();
        assert_eq!(arrivals.len(), 1);
        assert_eq!(arrivals[0].frame_id, "f30");
        assert_eq!(store.last_seq().await.unwrap(), 32);
    }

    on_both!(consent_states, a_consent_state_is_taken_once_and_expires);
    async fn a_consent_state_is_taken_once_and_expires(db: &Db) {
        let store = db.store().await;
        store.put_consent_state("s1", None, 1_000).await.unwrap();
        store.put_consent_state("s2", Some(4), 1_000).await.unwrap();
        assert_eq!(store.take_consent_state("s1", 0).await.unwrap(), Some(None));
        assert_eq!(
            store.take_consent_state("s1", 0).await.unwrap(),
            None,
            "once"
        );
        assert_eq!(
            store.take_consent_state("s2", 2_000).await.unwrap(),
            None,
            "too old"
        );
        assert_eq!(
            store.take_consent_state("s2", 0).await.unwrap(),
            None,
            "gone after all"
        );
        assert_eq!(store.take_consent_state("nope", 0).await.unwrap(), None);
    }

    on_both!(round_trips, state_label_stop_and_broadcasts_round_trip);
    async fn state_label_stop_and_broadcasts_round_trip(db: &Db) {
        let store = db.store().await;
        let id = store.create_integration(1).await.unwrap();
        let state =
            KitState::from_json(r#"{"format":"onair.kit","version":1,"live_id":3}"#).unwrap();
        store.save_state(id, &state, 1, 2).await.unwrap();
        store.set_label(id, "Mina", 1).await.unwrap();
        store
            .set_stop(id, Some(("reauthorize", "re-authorize: …")), 1, 3)
            .await
            .unwrap();
        store.set_enabled(id, false, 4).await.unwrap();
        let b = BroadcastRow {
            live_id: 3,
            ended_at_ms: 9,
            tally: "{}".to_owned(),
        };
        store.save_broadcast(id, &b, 1).await.unwrap();
        store
            .save_broadcast(
                id,
                &BroadcastRow {
                    tally: "{\"hearts\":1}".to_owned(),
                    ..b.clone()
                },
                1,
            )
            .await
            .unwrap();
        let row = store.integration(id).await.unwrap().unwrap();
        assert_eq!(row.kit_state, Some(state));
        assert_eq!(row.label.as_deref(), Some("Mina"));
        assert_eq!(row.stop.as_ref().map(|s| s.0.as_str()), Some("reauthorize"));
        assert!(!row.enabled);
        assert!(row.tokens.is_none());
        let all = store.broadcasts(id).await.unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].tally, "{\"hearts\":1}");
        store.set_stop(id, None, 1, 5).await.unwrap();
        assert!(store.integration(id).await.unwrap().unwrap().stop.is_none());
    }

    on_both!(fencing, a_replica_whose_lease_was_taken_writes_nothing_more);
    async fn a_replica_whose_lease_was_taken_writes_nothing_more(db: &Db) {
        let a = db.store().await;
        let b = db.store().await;
        assert_ne!(a.replica(), b.replica());
        let id = a.create_integration(1).await.unwrap();
        a.save_tokens(id, &tokens(1), 0, 1, 2).await.unwrap();
        // Held and not expired: nobody else takes it.
        assert!(b.take_leases(10, 15_000).await.unwrap().is_empty());
        let read = a.gate_read(id, 1).await.unwrap();
        assert!(
            read.lease_left_ms
                .is_some_and(|l| l > 10_000 && l <= 15_000),
            "{read:?}"
        );
        assert_eq!(read.generation, 1);
        assert_eq!(b.gate_read(id, 1).await.unwrap().lease_left_ms, None);
        // B takes it over (a DJ re-connected there).
        let lease = b.steal_lease(id, 15_000).await.unwrap().unwrap();
        assert_eq!(lease, 2);
        let state =
            KitState::from_json(r#"{"format":"onair.kit","version":1,"live_id":3}"#).unwrap();
        let fenced = |r: Result<(), StoreError>| matches!(r, Err(StoreError::Fenced { .. }));
        assert!(fenced(a.save_state(id, &state, 1, 3).await));
        assert!(fenced(a.set_stop(id, None, 1, 3).await));
        assert!(fenced(a.set_label(id, "x", 1).await));
        let ended = BroadcastRow {
            live_id: 3,
            ended_at_ms: 9,
            tally: "{}".to_owned(),
        };
        assert!(fenced(a.save_broadcast(id, &ended, 1).await));
        assert!(matches!(
            a.save_tokens(id, &tokens(2), 1, 1, 3).await,
            Err(StoreError::Fenced { .. })
        ));
        let log = LogRow {
            integration_id: id,
            frame_id: "f".to_owned(),
            kind: "chat".to_owned(),
            live_id: 3,
            seq: 1,
            at_ms: 1,
            summary: String::new(),
            detail: "{}".to_owned(),
            lease: 1,
        };
        a.insert_events(std::slice::from_ref(&log)).await.unwrap();
        assert!(
            a.events(id, None, None, 10).await.unwrap().is_empty(),
            "a fenced log row"
        );
        assert!(a.renew_leases(15_000).await.unwrap().is_empty());
        // B writes.
        b.save_state(id, &state, 2, 3).await.unwrap();
        assert_eq!(
            b.save_tokens(id, &tokens(2), 1, 2, 3).await.unwrap(),
            Some(2)
        );
        b.insert_events(&[LogRow { lease: 2, ..log }])
            .await
            .unwrap();
        assert_eq!(b.events(id, None, None, 10).await.unwrap().len(), 1);
        let held = b.renew_leases(15_000).await.unwrap();
        assert_eq!(held.len(), 1);
        assert_eq!(
            (held[0].id, held[0].generation, held[0].enabled),
            (id, 2, true)
        );
        // B leaves: A takes it at its next look.
        b.leave().await.unwrap();
        let taken = a.take_leases(10, 15_000).await.unwrap();
        assert_eq!(
            taken
                .iter()
                .map(|l| (l.id, l.generation))
                .collect::<Vec<_>>(),
            [(id, 3)]
        );
        assert_eq!(
            a.lease_owners().await.unwrap(),
            [(id, a.replica().to_owned())]
        );
    }

    on_both!(expiry, expired_leases_are_taken_and_replicas_counted);
    async fn expired_leases_are_taken_and_replicas_counted(db: &Db) {
        let a = db.store().await;
        let b = db.store().await;
        let mut ids = Vec::new();
        for _ in 0..6 {
            let id = a.create_integration_leased(1, 50).await.unwrap();
            a.save_tokens(id, &tokens(1), 0, 1, 2).await.unwrap();
            ids.push(id);
        }
        let disabled = a.create_integration_leased(1, 50).await.unwrap();
        a.save_tokens(disabled, &tokens(1), 0, 1, 2).await.unwrap();
        a.set_enabled(disabled, false, 3).await.unwrap();
        let (live, bots) = a.heartbeat(8_000).await.unwrap();
        assert_eq!((live.len(), bots), (1, 6));
        let (live, _) = b.heartbeat(8_000).await.unwrap();
        assert_eq!(live.len(), 2);
        let mut sorted = vec![a.replica().to_owned(), b.replica().to_owned()];
        sorted.sort();
        assert_eq!(live, sorted, "by id");
        tokio::time::sleep(std::time::Duration::from_millis(120)).await;
        // A's leases expired (A stopped renewing): two replicas take them
        // at once, each row once, the disabled one never.
        let (x, y) = tokio::join!(b.take_leases(4, 15_000), a.take_leases(4, 15_000));
        let (x, y) = (x.unwrap(), y.unwrap());
        assert_eq!(x.len() + y.len(), 6, "{x:?} {y:?}");
        let mut all: Vec<i64> = x.iter().chain(&y).map(|l| l.id).collect();
        all.sort_unstable();
        assert_eq!(all, ids);
        assert!(x.iter().chain(&y).all(|l| l.generation == 2 && l.enabled));
    }

    on_both!(quota, the_daily_quota_is_one_row_per_app);
    async fn the_daily_quota_is_one_row_per_app(db: &Db) {
        use onair::proto::quota::Block;
        use onair::proto::scope::Permission;
        let a = db.store().await;
        let b = db.store().await;
        assert_eq!(a.app_quota("app").await.unwrap(), DailyQuota::default());
        let blocked = DailyQuota {
            remaining: Some(40),
            reset_ms: Some(10_000),
            blocks: vec![Block {
                scope: Some(Permission::ListenersRead),
                until_ms: 10_000,
            }],
        };
        let merged = a.merge_app_quota("app", &blocked, 1_000).await.unwrap();
        assert_eq!(merged, blocked);
        assert_eq!(b.app_quota("app").await.unwrap(), blocked);
        assert_eq!(b.app_quota("other").await.unwrap(), DailyQuota::default());
        // What B learned later: fewer calls left, the same reset.
        let later = DailyQuota {
            remaining: Some(12),
            reset_ms: Some(10_000),
            blocks: vec![],
        };
        let merged = b.merge_app_quota("app", &later, 2_000).await.unwrap();
        assert_eq!(merged.remaining, Some(12));
        assert_eq!(merged.blocks, blocked.blocks);
        // After the reset the block is gone.
        let next_day = DailyQuota {
            remaining: Some(99),
            reset_ms: Some(90_000),
            blocks: vec![],
        };
        let merged = a.merge_app_quota("app", &next_day, 11_000).await.unwrap();
        assert_eq!(merged, next_day);
    }

    #[tokio::test]
    async fn a_refresh_costs_two_statements_on_postgres() {
        let Some(cluster) = crate::testdb::PgCluster::start("round-trips") else {
            return;
        };
        let proxy = crate::testdb::CountingProxy::start(cluster.port).await;
        let url = cluster
            .url
            .replace(&format!(":{}/", cluster.port), &format!(":{}/", proxy.port));
        let store = Store::open(&url, crate::testdb::cipher()).await.unwrap();
        let id = store.create_integration(1).await.unwrap();
        store.save_tokens(id, &tokens(1), 0, 1, 2).await.unwrap();
        // One refresh: the gate's read, then the fenced compare-and-swap.
        let mut per_refresh = Vec::new();
        for generation in 1..=30 {
            let before = proxy.trips();
            let read = store.gate_read(id, 1).await.unwrap();
            assert!(read.lease_left_ms.is_some());
            let saved = store
                .save_tokens(id, &tokens(generation + 1), read.generation, 1, 3)
                .await
                .unwrap();
            assert_eq!(saved, Some(read.generation + 1));
            per_refresh.push(proxy.trips() - before);
        }
        eprintln!(
            "database round trips per refresh (first on a connection, then): {per_refresh:?}"
        );
        // Once the statements are prepared on the connections: two
        // statements, one round trip each on the refresh's path, and one
        // ping each as sqlx's pool takes the connection back (off the path).
        assert_eq!(per_refresh.last(), Some(&4), "{per_refresh:?}");
    }
}
