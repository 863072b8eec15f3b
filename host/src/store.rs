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

use onair::bot::DailyQuota;
use onair::kit::KitState;
use onair::Tokens;
use sha2::{Digest, Sha256};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::AnyPool;

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
    /// The configured key opens none of the stored pairs: every bot would
    /// need consent again, so the host refuses to start.
    #[error(
        "the key `ONAIR_HOST_KEY` is not this database's: its key check and its {pairs} \
         stored pairs do not open with it (start with the key they were sealed with)"
    )]
    WrongKey {
        /// How many rows hold a pair.
        pairs: usize,
    },
    /// The SQLite database file cannot be opened or read.
    #[error("{kind} database file {path}: {message}")]
    DatabaseFile {
        /// `damaged` or `unreadable`.
        kind: &'static str,
        /// The file.
        path: String,
        /// What SQLite said.
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
    /// The stored pair is there but does not open (damaged, sealed under
    /// another key or for another row): `tokens` is `None`, the bot needs
    /// the DJ's consent. What went wrong, no secret in it.
    pub pair_unreadable: Option<String>,
    /// The stored kit state is there but does not read: `kit_state` is
    /// `None`, the bot starts without memory. Why.
    pub state_unreadable: Option<String>,
}

/// An integration's row as stored (before the pair is opened).
#[derive(sqlx::FromRow)]
struct IntegrationRow {
    id: i64,
    label: Option<String>,
    enabled: i64,
    tokens: Option<String>,
    generation: i64,
    kit_state: Option<String>,
    stop_code: Option<String>,
    stop_message: Option<String>,
    created_at_ms: i64,
}

/// A broadcast's final tally.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
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

/// A lease as `RETURNING` gives it.
#[derive(sqlx::FromRow)]
struct LeaseRow {
    id: i64,
    lease_generation: i64,
    enabled: i64,
}

/// A log row as stored.
#[derive(sqlx::FromRow)]
struct EventRow {
    integration_id: i64,
    frame_id: String,
    kind: String,
    live_id: i64,
    seq: i64,
    at_ms: i64,
    summary: String,
    detail: String,
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
    /// Where token pairs are saved: on SQLite a connection of their own,
    /// so a refreshed pair's save waits for no queue of other writes (at
    /// most for SQLite's write lock, one statement); on PostgreSQL the
    /// pool.
    tokens_pool: AnyPool,
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

/// The key's check value and what it is bound to.
const KEY_CHECK: &[u8] = b"onair-host key check";
const KEY_CHECK_AAD: &[u8] = b"onair-host:key-check";

fn row_aad(id: i64) -> Vec<u8> {
    format!("onair-host:integration:{id}").into_bytes()
}

/// The escape of stored text: PostgreSQL's `TEXT` refuses NUL, and text
/// from the service (a nickname, a chat line) may hold one. In stored text
/// NUL is written `ESC 0` and `ESC` itself `ESC 1`, on both databases, so
/// what is read back is what was written; an `ESC` followed by anything
/// else is read as it stands. `ESC` is U+F8FF, a private-use character.
const ESC: char = '\u{F8FF}';

/// Text as stored (see [`ESC`]).
fn to_stored(text: &str) -> String {
    if !text.contains(['\0', ESC]) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => {
                out.push(ESC);
                out.push('0');
            }
            ESC => {
                out.push(ESC);
                out.push('1');
            }
            c => out.push(c),
        }
    }
    out
}

/// Stored text read back (see [`ESC`]).
fn from_stored(text: &str) -> String {
    if !text.contains(ESC) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ESC {
            match chars.peek() {
                Some('0') => {
                    chars.next();
                    out.push('\0');
                    continue;
                }
                Some('1') => {
                    chars.next();
                    out.push(ESC);
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// A pool over `options` of at most `max` connections; SQLite's in WAL
/// mode with a busy timeout (a writer waits for another's lock).
async fn connect_pool(
    options: &AnyConnectOptions,
    sqlite: bool,
    max: u32,
    test_before_acquire: bool,
) -> Result<AnyPool, StoreError> {
    Ok(AnyPoolOptions::new()
        .max_connections(max)
        // A replica cut from its database must notice in seconds, not
        // hang its lease keeper.
        .acquire_timeout(Duration::from_secs(if sqlite { 30 } else { 3 }))
        .test_before_acquire(test_before_acquire)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if sqlite {
                    // WAL with synchronous NORMAL: a commit is in the WAL
                    // file when the statement returns (it survives the
                    // process being killed; a power loss may take the last
                    // commits). FULL would add an fsync to every commit, a
                    // refresh's save among them.
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
        .connect_with(options.clone())
        .await?)
}

/// Opens the SQLite database at `url` on one connection and checks it
/// (`PRAGMA quick_check`): a file that cannot be opened, is not a database
/// or is damaged (truncated) is [`StoreError::DatabaseFile`], said at once.
async fn check_sqlite_file(url: &str, options: &AnyConnectOptions) -> Result<(), StoreError> {
    use sqlx::Connection;
    let path = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:")
        .split('?')
        .next()
        .unwrap_or_default()
        .to_owned();
    let file_error = |e: sqlx::Error| -> StoreError {
        let code = match &e {
            sqlx::Error::Database(d) => d
                .code()
                .and_then(|c| c.parse::<i32>().ok())
                .map(|c| c & 0xff),
            _ => None,
        };
        match code {
            // SQLITE_CORRUPT, SQLITE_NOTADB
            Some(11 | 26) => StoreError::DatabaseFile {
                kind: "damaged",
                path: path.clone(),
                message: e.to_string(),
            },
            // SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY
            Some(10 | 14 | 3 | 8) => StoreError::DatabaseFile {
                kind: "unreadable",
                path: path.clone(),
                message: e.to_string(),
            },
            _ => StoreError::Db(e),
        }
    };
    let mut conn = sqlx::AnyConnection::connect_with(options)
        .await
        .map_err(file_error)?;
    let checked: Result<Vec<String>, sqlx::Error> = async {
        sqlx::query("PRAGMA busy_timeout = 10000")
            .execute(&mut conn)
            .await?;
        sqlx::query_scalar("PRAGMA quick_check")
            .fetch_all(&mut conn)
            .await
    }
    .await;
    let _ = conn.close().await;
    let lines = checked.map_err(file_error)?;
    if lines.iter().any(|l| l != "ok") {
        return Err(StoreError::DatabaseFile {
            kind: "damaged",
            path,
            message: lines.into_iter().take(3).collect::<Vec<_>>().join("; "),
        });
    }
    Ok(())
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
        if sqlite {
            // The pool retries a connection that fails until its acquire
            // timeout: a damaged file would be reported as a timeout 30 s
            // later. One connection first says what is wrong at once.
            check_sqlite_file(url, &options).await?;
        }
        let replica: String = {
            use rand::RngExt;
            let bytes: [u8; 8] = rand::rng().random();
            bytes.iter().map(|b| format!("{b:02x}")).collect()
        };
        // SQLite has one writer: one connection serializes writes instead
        // of failing them with SQLITE_BUSY; no ping before each statement
        // on PostgreSQL (a round trip each): sqlx pings every connection
        // it takes back already.
        let pool = connect_pool(&options, sqlite, if sqlite { 1 } else { 10 }, sqlite).await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        // An in-memory database is one connection's own: no second one.
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let tokens_pool = if sqlite && !in_memory {
            connect_pool(&options, true, 1, false).await?
        } else {
            pool.clone()
        };
        Ok(Store {
            pool,
            tokens_pool,
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

    /// The pool, for the tenants' queries ([`crate::tenants`]).
    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Closes the pool (after the last write). On SQLite the WAL is
    /// checkpointed into the database file first and truncated, so the
    /// file alone (a backup of it) holds the newest pairs.
    pub async fn close(&self) {
        // The tokens' connection first (on SQLite): the checkpoint then
        // has the database to itself.
        self.tokens_pool.close().await;
        if self.dialect == Dialect::Sqlite && !self.pool.is_closed() {
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(&self.pool)
                .await
            {
                tracing::warn!(error = %e, "the WAL was not checkpointed");
            }
        }
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

    /// A row read: a pair or a kit state that does not open is reported
    /// on the row (the bot needs consent, or starts without memory), never
    /// as an error of the read: one row's damage is that bot's alone.
    fn integration_from(&self, row: IntegrationRow) -> Integration {
        let id = row.id;
        let (tokens, pair_unreadable) = match self.open_tokens(id, row.tokens) {
            Ok(tokens) => (tokens, None),
            Err(e) => (None, Some(e.to_string())),
        };
        let (kit_state, state_unreadable) = match row.kit_state.map(KitState::from_json) {
            None => (None, None),
            Some(Ok(state)) => (Some(state), None),
            Some(Err(e)) => (
                None,
                Some(
                    StoreError::Corrupt {
                        id,
                        what: "kit state",
                        message: e.to_string(),
                    }
                    .to_string(),
                ),
            ),
        };
        Integration {
            id,
            label: row.label.map(|l| from_stored(&l)),
            enabled: row.enabled != 0,
            tokens,
            generation: row.generation,
            kit_state,
            stop: row.stop_code.map(|c| {
                (
                    from_stored(&c),
                    from_stored(&row.stop_message.unwrap_or_default()),
                )
            }),
            created_at_ms: row.created_at_ms,
            pair_unreadable,
            state_unreadable,
        }
    }

    const COLUMNS: &'static str = "id, label, enabled, tokens, generation, kit_state, \
        stop_code, stop_message, created_at_ms";

    /// Every integration, by id. A row whose pair or kit state does not
    /// open is returned with [`Integration::pair_unreadable`] or
    /// [`Integration::state_unreadable`] set.
    pub async fn integrations(&self) -> Result<Vec<Integration>, StoreError> {
        let rows: Vec<IntegrationRow> = sqlx::query_as(&format!(
            "SELECT {} FROM integrations ORDER BY id",
            Self::COLUMNS
        ))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|r| self.integration_from(r)).collect())
    }

    /// One integration (a damaged pair or kit state reported on it, as
    /// [`integrations`](Self::integrations) does).
    pub async fn integration(&self, id: i64) -> Result<Option<Integration>, StoreError> {
        let row: Option<IntegrationRow> = sqlx::query_as(&format!(
            "SELECT {} FROM integrations WHERE id = $1",
            Self::COLUMNS
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| self.integration_from(r)))
    }

    /// At start: whether the configured key is the database's.
    /// [`StoreError::WrongKey`] when it does not open the key's check value
    /// (sealed by the first key that opened this database), or, in a
    /// database without one yet, when rows hold pairs and not one opens.
    /// One row that does not open is that bot's problem alone.
    pub async fn check_key(&self) -> Result<(), StoreError> {
        let pairs = || async {
            let rows: Vec<(i64, String)> =
                sqlx::query_as("SELECT id, tokens FROM integrations WHERE tokens IS NOT NULL")
                    .fetch_all(&self.pool)
                    .await?;
            Ok::<_, StoreError>(rows)
        };
        let stored: Option<String> =
            sqlx::query_scalar("SELECT sealed FROM key_check WHERE id = 1")
                .fetch_optional(&self.pool)
                .await?;
        if let Some(sealed) = stored {
            return match self.cipher.open(&sealed, KEY_CHECK_AAD) {
                Ok(plain) if plain.as_slice() == KEY_CHECK => Ok(()),
                _ => Err(StoreError::WrongKey {
                    pairs: pairs().await?.len(),
                }),
            };
        }
        let rows = pairs().await?;
        if !rows.is_empty()
            && !rows
                .iter()
                .any(|(id, sealed)| self.cipher.open(sealed, &row_aad(*id)).is_ok())
        {
            return Err(StoreError::WrongKey { pairs: rows.len() });
        }
        // This key is the database's from now on (two replicas starting at
        // once: one insert wins, and the other's key is checked at its next
        // start, both keys being the same when configured alike).
        sqlx::query(
            "INSERT INTO key_check (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
        )
        .bind(self.cipher.seal(KEY_CHECK, KEY_CHECK_AAD))
        .execute(&self.pool)
        .await?;
        Ok(())
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
            let done = sqlx::query_scalar(&sql)
                .bind(now_ms)
                .bind(self.replica.to_string())
                .bind(ttl_ms)
                .fetch_one(&self.pool)
                .await;
            match done {
                Ok(id) => return Ok(id),
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
        .execute(&self.tokens_pool)
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
            vec![stop.map(|s| to_stored(s.0)), stop.map(|s| to_stored(s.1))],
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
            vec![Some(to_stored(label))],
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
        Ok(sqlx::query_as(
            "SELECT live_id, ended_at_ms, tally FROM broadcasts WHERE integration_id = $1 \
             ORDER BY ended_at_ms, live_id",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Appends log rows, 64 to a statement and a transaction; a row whose
    /// (bot, frame id, kind) is there already is left out, and so is a row
    /// whose lease (`LogRow::lease`) is no longer this replica's (fencing).
    /// Text is stored whatever it holds (a NUL escaped). When a statement
    /// fails, its rows are written one by one, so a row the database
    /// refuses is the only one lost: the rows dropped so far are counted in
    /// the answer. An error means not one row of a failed statement went
    /// through (the database itself failed).
    pub async fn insert_events(&self, rows: &[LogRow]) -> Result<usize, StoreError> {
        /// Rows per statement (9 parameters each, far under SQLite's limit).
        const PER_STATEMENT: usize = 64;
        let mut dropped = 0;
        // One short transaction per statement: the bots' own saves (kit
        // state, tokens) wait for the one connection between them, not for
        // the whole batch.
        for chunk in rows.chunks(PER_STATEMENT) {
            let Err(e) = self.insert_chunk(chunk).await else {
                continue;
            };
            if chunk.len() == 1 {
                if self.check_alive().await.is_err() {
                    return Err(e);
                }
                tracing::warn!(bot = chunk[0].integration_id, error = %e, "event log: a row refused");
                dropped += 1;
                continue;
            }
            let mut written = 0;
            let mut first = None;
            for row in chunk {
                match self.insert_chunk(std::slice::from_ref(row)).await {
                    Ok(()) => written += 1,
                    Err(e) => {
                        tracing::warn!(bot = row.integration_id, error = %e, "event log: a row refused");
                        first.get_or_insert(e);
                    }
                }
            }
            if written == 0 && self.check_alive().await.is_err() {
                return Err(first.unwrap_or(e));
            }
            dropped += chunk.len() - written;
        }
        Ok(dropped)
    }

    /// Whether the database answers at all.
    async fn check_alive(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn insert_chunk(&self, chunk: &[LogRow]) -> Result<(), StoreError> {
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
                .bind(to_stored(&r.frame_id))
                .bind(to_stored(&r.kind))
                .bind(r.live_id)
                .bind(r.seq)
                .bind(r.at_ms)
                .bind(to_stored(&r.summary))
                .bind(to_stored(&r.detail))
                .bind(r.lease);
        }
        query = query.bind(self.replica.to_string());
        query.execute(&mut *tx).await?;
        tx.commit().await?;
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
        let rows: Vec<EventRow> = sqlx::query_as(
            "SELECT integration_id, frame_id, kind, live_id, seq, at_ms, summary, detail \
             FROM events WHERE integration_id = $1 AND ($2 < 0 OR live_id = $2) \
             AND ($3 = '' OR kind = $3) ORDER BY seq DESC LIMIT $4",
        )
        .bind(id)
        .bind(live_id.unwrap_or(-1))
        .bind(to_stored(kind.unwrap_or("")))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r: EventRow| LogRow {
                integration_id: r.integration_id,
                frame_id: from_stored(&r.frame_id),
                kind: from_stored(&r.kind),
                live_id: r.live_id,
                seq: r.seq,
                at_ms: r.at_ms,
                summary: from_stored(&r.summary),
                detail: from_stored(&r.detail),
                lease: 0,
            })
            .collect())
    }

    /// The highest log sequence number stored (0 when none).
    pub async fn last_seq(&self) -> Result<i64, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Takes a consent request back (one stored by
    /// [`tenants::put_consent_state`](crate::tenants::put_consent_state)),
    /// once: `Some(bot)` when it was there and made after `since_ms` (it is
    /// gone after this either way).
    pub async fn take_consent_state(
        &self,
        state: &str,
        since_ms: i64,
    ) -> Result<Option<Option<i64>>, StoreError> {
        let row: Option<(Option<i64>, i64)> = sqlx::query_as(
            "DELETE FROM oauth_states WHERE state_hash = $1 RETURNING integration_id, created_at_ms",
        )
        .bind(state_hash(state))
        .fetch_optional(&self.pool)
        .await?;
        Ok(row
            .filter(|(_, created)| *created >= since_ms)
            .map(|(bot, _)| bot))
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
        let live: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT id FROM replicas WHERE heartbeat_ms > {now} - $1 ORDER BY id"
        ))
        .bind(alive_ms)
        .fetch_all(&self.pool)
        .await?;
        let bots = sqlx::query_scalar(
            "SELECT COUNT(*) FROM integrations WHERE enabled = 1 AND tokens IS NOT NULL",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok((live, bots))
    }

    /// What the store remembers of every bot's broadcasts for the probe
    /// planner ([`crate::probe`]), by bot id.
    pub async fn probe_histories(&self) -> Result<Vec<(i64, crate::probe::History)>, StoreError> {
        let rows: Vec<(i64, i64, String)> = sqlx::query_as(
            "SELECT integration_id, last_ended_ms, starts FROM probe_history ORDER BY integration_id",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, ended, starts)| {
                let ended = (ended > 0).then_some(ended);
                (id, crate::probe::History::from_stored(ended, &starts))
            })
            .collect())
    }

    /// Saves bot `id`'s broadcast history for the probe planner (advisory:
    /// unfenced, the last writer wins; nothing for a bot that is gone).
    pub async fn save_probe_history(
        &self,
        id: i64,
        history: &crate::probe::History,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO probe_history (integration_id, last_ended_ms, starts) \
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM integrations WHERE id = $1) \
             ON CONFLICT (integration_id) \
             DO UPDATE SET last_ended_ms = excluded.last_ended_ms, starts = excluded.starts",
        )
        .bind(id)
        .bind(history.last_ended_ms.unwrap_or(0))
        .bind(history.starts_text())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The highest integration id (0: none yet).
    pub async fn max_integration_id(&self) -> Result<i64, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM integrations")
                .fetch_one(&self.pool)
                .await?,
        )
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

    fn leases_from(rows: Vec<LeaseRow>) -> Vec<Lease> {
        rows.into_iter()
            .map(|r| Lease {
                id: r.id,
                generation: r.lease_generation,
                enabled: r.enabled != 0,
            })
            .collect()
    }

    /// Renews every lease this replica holds for `ttl_ms` more (one
    /// statement); the leases it still holds.
    pub async fn renew_leases(&self, ttl_ms: i64) -> Result<Vec<Lease>, StoreError> {
        let rows = sqlx::query_as(&format!(
            "UPDATE integrations SET lease_expires_ms = {} + $1 WHERE lease_owner = $2 \
             RETURNING id, lease_generation, enabled",
            self.dialect.now_ms()
        ))
        .bind(ttl_ms)
        .bind(self.replica.to_string())
        .fetch_all(&self.pool)
        .await?;
        Ok(Self::leases_from(rows))
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
        let rows = sqlx::query_as(&format!(
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
        Ok(Self::leases_from(rows))
    }

    /// Takes bot `id`'s lease whoever holds it (a DJ re-connects through
    /// this replica; the holder's writes are fenced from now on); its
    /// generation.
    pub async fn steal_lease(&self, id: i64, ttl_ms: i64) -> Result<Option<i64>, StoreError> {
        Ok(sqlx::query_scalar(&format!(
            "UPDATE integrations SET lease_owner = $1, lease_generation = lease_generation + 1, \
             lease_expires_ms = {} + $2 WHERE id = $3 RETURNING lease_generation",
            self.dialect.now_ms()
        ))
        .bind(self.replica.to_string())
        .bind(ttl_ms)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
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
        #[derive(sqlx::FromRow)]
        struct Row {
            generation: i64,
            tokens: Option<String>,
            lease_left_ms: i64,
        }
        let row: Option<Row> = sqlx::query_as(&format!(
            "SELECT generation, tokens, CASE WHEN lease_owner = $2 AND lease_generation = $3 \
             THEN lease_expires_ms - {} ELSE -1 END AS lease_left_ms FROM integrations WHERE id = $1",
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
        Ok(GateRead {
            generation: row.generation,
            tokens: self.open_tokens(id, row.tokens)?,
            lease_left_ms: (row.lease_left_ms >= 0).then_some(row.lease_left_ms),
        })
    }

    /// Who drives each bot: (bot, replica) for every lease held now.
    pub async fn lease_owners(&self) -> Result<Vec<(i64, String)>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT id, lease_owner FROM integrations WHERE lease_owner IS NOT NULL \
             AND lease_expires_ms > {} ORDER BY id",
            self.dialect.now_ms()
        ))
        .fetch_all(&self.pool)
        .await?)
    }

    // ---- The app's daily quota ----

    /// The app's daily quota as the store knows it.
    pub async fn app_quota(&self, client_id: &str) -> Result<DailyQuota, StoreError> {
        let row: Option<String> =
            sqlx::query_scalar("SELECT quota FROM app_quota WHERE client_id = $1")
                .bind(client_id.to_owned())
                .fetch_optional(&self.pool)
                .await?;
        match row {
            Some(text) => serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                id: 0,
                what: "daily quota",
                message: e.to_string(),
            }),
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
        let row: Option<String> = sqlx::query_scalar(&format!(
            "SELECT quota FROM app_quota WHERE client_id = $1 {}",
            self.dialect.lock_row()
        ))
        .bind(client_id.to_owned())
        .fetch_optional(&mut *tx)
        .await?;
        let mut app = match row {
            Some(text) => serde_json::from_str(&text).unwrap_or_default(),
            None => DailyQuota::default(),
        };
        let u_now = u64::try_from(now_ms).unwrap_or(0);
        app.merge(learned, u_now);
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

    on_both!(probe_history, probe_history_is_kept_per_bot);
    async fn probe_history_is_kept_per_bot(db: &Db) {
        let store = db.store().await;
        let id = store.create_integration(10).await.unwrap();
        let other = store.create_integration(11).await.unwrap();
        assert!(store.probe_histories().await.unwrap().is_empty());
        let mut h = crate::probe::History::default();
        h.started(1_000);
        store.save_probe_history(id, &h).await.unwrap();
        h.started(90_000);
        h.ended(95_000);
        store.save_probe_history(id, &h).await.unwrap();
        store
            .save_probe_history(other, &crate::probe::History::default())
            .await
            .unwrap();
        // A bot that is gone: nothing written, no error.
        store.save_probe_history(id + 100, &h).await.unwrap();
        let all = store.probe_histories().await.unwrap();
        assert_eq!(all, [(id, h), (other, crate::probe::History::default())]);
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
        let stored: Vec<Option<String>> = sqlx::query_scalar("SELECT tokens FROM integrations")
            .fetch_all(&store.pool)
            .await
            .unwrap();
        for text in stored {
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
        let row = store.integration(b).await.unwrap().unwrap();
        assert!(row.tokens.is_none());
        let why = row.pair_unreadable.expect("reported on the row");
        assert!(why.contains("do not open"), "{why}");
        assert!(!why.contains("SECRET"));
        assert!(store
            .integration(a)
            .await
            .unwrap()
            .unwrap()
            .tokens
            .is_some());
    }

    on_both!(one_damaged_pair, a_host_whose_only_pair_is_damaged_starts);
    /// With the key check, one damaged pair is told from a wrong key even
    /// when it is the only one.
    async fn a_host_whose_only_pair_is_damaged_starts(db: &Db) {
        let store = db.store().await;
        let id = store.create_integration(1).await.unwrap();
        store.save_tokens(id, &tokens(1), 0, 1, 2).await.unwrap();
        store.check_key().await.unwrap();
        sqlx::query("UPDATE integrations SET tokens = $1 WHERE id = $2")
            .bind("AAAA")
            .bind(id)
            .execute(&store.pool)
            .await
            .unwrap();
        store
            .check_key()
            .await
            .expect("the right key, one damaged pair");
        let rows = store.integrations().await.unwrap();
        assert!(rows[0].pair_unreadable.is_some());
    }

    on_both!(damaged_rows, a_damaged_row_is_reported_on_that_row_alone);
    async fn a_damaged_row_is_reported_on_that_row_alone(db: &Db) {
        let store = db.store().await;
        let state =
            KitState::from_json(r#"{"format":"onair.kit","version":1,"live_id":3}"#).unwrap();
        let mut ids = Vec::new();
        for _ in 0..4 {
            let id = store.create_integration(1).await.unwrap();
            store.save_tokens(id, &tokens(1), 0, 1, 2).await.unwrap();
            store.save_state(id, &state, 1, 2).await.unwrap();
            ids.push(id);
        }
        // Row 2: its sealed pair damaged (one character of the base64
        // changed); row 3: its kit state; row 4: its pair sealed under
        // another key.
        let sealed: String = sqlx::query_scalar("SELECT tokens FROM integrations WHERE id = $1")
            .bind(ids[1])
            .fetch_one(&store.pool)
            .await
            .unwrap();
        let mut damaged: Vec<char> = sealed.chars().collect();
        let at = damaged.len() / 2;
        damaged[at] = if damaged[at] == 'A' { 'B' } else { 'A' };
        let damaged: String = damaged.into_iter().collect();
        let other =
            TokenCipher::from_base64("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=").unwrap();
        let foreign = other.seal(tokens(1).to_json().as_bytes(), &row_aad(ids[3]));
        for (sql, value, id) in [
            (
                "UPDATE integrations SET tokens = $1 WHERE id = $2",
                damaged,
                ids[1],
            ),
            (
                "UPDATE integrations SET kit_state = $1 WHERE id = $2",
                "{\"format\":\"onair.kit\",\"vers".to_owned(),
                ids[2],
            ),
            (
                "UPDATE integrations SET tokens = $1 WHERE id = $2",
                foreign,
                ids[3],
            ),
        ] {
            sqlx::query(sql)
                .bind(value)
                .bind(id)
                .execute(&store.pool)
                .await
                .unwrap();
        }
        let rows = store.integrations().await.expect("every row is read");
        assert_eq!(rows.len(), 4);
        assert!(rows[0].tokens.is_some() && rows[0].kit_state.is_some());
        assert!(rows[0].pair_unreadable.is_none() && rows[0].state_unreadable.is_none());
        assert!(rows[1].tokens.is_none() && rows[1].pair_unreadable.is_some());
        assert_eq!(
            rows[1].kit_state,
            Some(state.clone()),
            "its memory is intact"
        );
        assert!(rows[2].tokens.is_some(), "its pair is intact");
        assert!(rows[2].kit_state.is_none());
        let why = rows[2].state_unreadable.as_deref().unwrap();
        assert!(why.contains("kit state"), "{why}");
        assert!(rows[3].tokens.is_none() && rows[3].pair_unreadable.is_some());
        // Some pairs open: the key is right.
        store.check_key().await.unwrap();
        // A key that opens none of the pairs: the key is wrong.
        let third =
            TokenCipher::from_base64("CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=").unwrap();
        let wrong = Store::open(db.url(), third).await.unwrap();
        let err = wrong.check_key().await.unwrap_err();
        assert!(matches!(err, StoreError::WrongKey { pairs: 4 }), "{err}");
        assert!(
            err.to_string()
                .contains("the key `ONAIR_HOST_KEY` is not this database's: its key check and its 4 stored pairs do not open with it"),
            "{err}"
        );
        // The key check decides, whatever the rows hold: with no pair at
        // all the wrong key is still refused.
        sqlx::query("UPDATE integrations SET tokens = NULL")
            .execute(&store.pool)
            .await
            .unwrap();
        assert!(matches!(
            wrong.check_key().await,
            Err(StoreError::WrongKey { pairs: 0 })
        ));
        store.check_key().await.unwrap();
        // A database from before the key check, without a pair: nothing to
        // say about the key, which seals the check from then on.
        sqlx::query("DELETE FROM key_check")
            .execute(&store.pool)
            .await
            .unwrap();
        wrong.check_key().await.unwrap();
    }

    #[test]
    fn stored_text_round_trips_whatever_it_holds() {
        for text in [
            "",
            "plain",
            "a\0b",
            "\0",
            "\u{F8FF}",
            "\u{F8FF}0",
            "\u{F8FF}1\0\u{F8FF}\u{F8FF}0",
            "nul at the end\0",
        ] {
            let stored = to_stored(text);
            assert!(!stored.contains('\0'), "{stored:?}");
            assert_eq!(from_stored(&stored), text, "{stored:?}");
        }
        // Text stored before the escape (an ESC followed by anything else)
        // reads as it stands.
        assert_eq!(from_stored("x\u{F8FF}y"), "x\u{F8FF}y");
        assert_eq!(from_stored("x\u{F8FF}"), "x\u{F8FF}");
    }

    on_both!(nul_text, a_nul_in_one_room_fails_no_other_bots_rows);
    async fn a_nul_in_one_room_fails_no_other_bots_rows(db: &Db) {
        let store = db.store().await;
        let a = store.create_integration(1).await.unwrap();
        let b = store.create_integration(1).await.unwrap();
        let row = |id: i64, seq: i64, summary: String| LogRow {
            integration_id: id,
            frame_id: format!("f{seq}"),
            kind: "chat".to_owned(),
            live_id: 5,
            seq,
            at_ms: seq,
            summary,
            detail: "{}".to_owned(),
            lease: 1,
        };
        // One batch, as the log writer sends it: two rooms' lines
        // interleaved, one of room A's holding a NUL (and the escape
        // character itself).
        let mut batch = Vec::new();
        for i in 0..40 {
            batch.push(row(b, 2 * i, format!("B line {i}")));
            let text = if i == 7 {
                "Mina: a\0b \u{F8FF}0".to_owned()
            } else {
                format!("A line {i}")
            };
            batch.push(row(a, 2 * i + 1, text));
        }
        assert_eq!(
            store.insert_events(&batch).await.unwrap(),
            0,
            "nothing dropped"
        );
        assert_eq!(store.events(b, None, None, 100).await.unwrap().len(), 40);
        let kept = store.events(a, None, None, 100).await.unwrap();
        assert_eq!(kept.len(), 40);
        assert!(
            kept.iter().any(|r| r.summary == "Mina: a\0b \u{F8FF}0"),
            "the line as it was read"
        );
        // A nickname with a NUL is the bot's label.
        store.set_label(a, "Mi\0na", 1).await.unwrap();
        store
            .set_stop(a, Some(("unexpected", "said \0")), 1, 3)
            .await
            .unwrap();
        let read = store.integration(a).await.unwrap().unwrap();
        assert_eq!(read.label.as_deref(), Some("Mi\0na"));
        assert_eq!(read.stop.map(|s| s.1).as_deref(), Some("said \0"));
    }

    #[tokio::test]
    async fn a_statement_the_database_refuses_costs_only_its_own_row() {
        // Whatever makes the database refuse one row (here a trigger
        // refuses it), the batch's other rows are written.
        let db = Db::Sqlite(crate::testdb::SqliteDb::new("refused-row"));
        let store = db.store().await;
        let a = store.create_integration(1).await.unwrap();
        sqlx::query(
            "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.summary = 'poison' \
             BEGIN SELECT RAISE(ABORT, 'refused'); END",
        )
        .execute(&store.pool)
        .await
        .unwrap();
        let rows: Vec<LogRow> = (0..40)
            .map(|i| LogRow {
                integration_id: a,
                frame_id: format!("f{i}"),
                kind: "chat".to_owned(),
                live_id: 1,
                seq: i,
                at_ms: i,
                summary: if i == 3 {
                    "poison".into()
                } else {
                    format!("#{i}")
                },
                detail: "{}".to_owned(),
                lease: 1,
            })
            .collect();
        assert_eq!(store.insert_events(&rows).await.unwrap(), 1);
        assert_eq!(store.events(a, None, None, 100).await.unwrap().len(), 39);
    }

    #[tokio::test]
    async fn a_damaged_database_file_is_said_at_once() {
        let db = crate::testdb::SqliteDb::new("truncated");
        let store = Store::open(&db.url, crate::testdb::cipher()).await.unwrap();
        for _ in 0..50 {
            let id = store.create_integration(1).await.unwrap();
            store.save_tokens(id, &tokens(1), 0, 1, 2).await.unwrap();
            let rows: Vec<LogRow> = (0..30)
                .map(|i| LogRow {
                    integration_id: id,
                    frame_id: format!("f{i}"),
                    kind: "chat".to_owned(),
                    live_id: 1,
                    seq: id * 100 + i,
                    at_ms: i,
                    summary: "x".repeat(200),
                    detail: "{}".to_owned(),
                    lease: 1,
                })
                .collect();
            store.insert_events(&rows).await.unwrap();
        }
        store.close().await;
        let path = db
            .url
            .trim_start_matches("sqlite://")
            .trim_end_matches("?mode=rwc")
            .to_owned();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 100_000, "{len}");
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len / 2).unwrap();
        drop(file);
        let started = std::time::Instant::now();
        let err = Store::open(&db.url, crate::testdb::cipher())
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert!(
            matches!(
                err,
                StoreError::DatabaseFile {
                    kind: "damaged",
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("damaged database file "),
            "{err}"
        );
        assert!(took < std::time::Duration::from_secs(2), "{took:?}");
        // Not a database at all.
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        let err = Store::open(&db.url, crate::testdb::cipher())
            .await
            .unwrap_err();
        assert!(
            err.to_string().starts_with("damaged database file "),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_pair_is_saved_without_waiting_for_the_other_writes_queue() {
        let db = crate::testdb::SqliteDb::new("tokens-connection");
        let store = Store::open(&db.url, crate::testdb::cipher()).await.unwrap();
        let id = store.create_integration(1).await.unwrap();
        // Every other write waits for the store's one connection: here it
        // is taken (as by a long queue of other bots' writes).
        let held = store.pool.acquire().await.unwrap();
        let started = std::time::Instant::now();
        let saved = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            store.save_tokens(id, &tokens(1), 0, 1, 2),
        )
        .await
        .expect("the pair's save waits for no queue");
        assert_eq!(saved.unwrap(), Some(1));
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
        drop(held);
        let row = store.integration(id).await.unwrap().unwrap();
        assert_eq!(row.tokens.map(|t| t.generation()), Some(1));
        store.close().await;
    }

    #[tokio::test]
    async fn an_in_memory_database_keeps_its_pairs_on_its_one_connection() {
        let store = Store::open("sqlite::memory:", crate::testdb::cipher())
            .await
            .unwrap();
        let id = store.create_integration(1).await.unwrap();
        assert_eq!(
            store.save_tokens(id, &tokens(1), 0, 1, 2).await.unwrap(),
            Some(1)
        );
        let row = store.integration(id).await.unwrap().unwrap();
        assert_eq!(row.tokens.map(|t| t.generation()), Some(1));
        store.close().await;
    }

    #[tokio::test]
    async fn a_clean_stop_checkpoints_the_wal_into_the_database_file() {
        let db = crate::testdb::SqliteDb::new("checkpoint");
        let store = Store::open(&db.url, crate::testdb::cipher()).await.unwrap();
        let id = store.create_integration(1).await.unwrap();
        for generation in 1..=20 {
            store
                .save_tokens(id, &tokens(generation), generation as i64 - 1, 1, 2)
                .await
                .unwrap();
        }
        let path = db
            .url
            .trim_start_matches("sqlite://")
            .trim_end_matches("?mode=rwc")
            .to_owned();
        let wal = format!("{path}-wal");
        assert!(
            std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) > 0,
            "the newest pairs are in the WAL before the stop"
        );
        // Another connection on the file (an operator's `sqlite3` shell, a
        // monitoring read), idle: the host's is not the last one to close,
        // so SQLite's own checkpoint at the last close does not happen.
        let other = {
            use sqlx::Connection;
            let mut other = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
                .await
                .unwrap();
            let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM integrations")
                .fetch_one(&mut other)
                .await
                .unwrap();
            assert_eq!(rows, 1);
            other
        };
        store.close().await;
        assert_eq!(
            std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0),
            0,
            "the WAL is empty or gone after a clean stop"
        );
        // A backup of the database file alone holds the newest pair.
        let backup = crate::testdb::SqliteDb::new("checkpoint-backup");
        let copy = backup
            .url
            .trim_start_matches("sqlite://")
            .trim_end_matches("?mode=rwc")
            .to_owned();
        std::fs::copy(&path, &copy).unwrap();
        {
            use sqlx::Connection;
            other.close().await.unwrap();
        }
        let restored = Store::open(&backup.url, crate::testdb::cipher())
            .await
            .unwrap();
        let row = restored.integration(id).await.unwrap().unwrap();
        assert_eq!(row.generation, 20);
        assert_eq!(row.tokens.map(|t| t.generation()), Some(20));
        restored.close().await;
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
        use crate::tenants::{put_consent_state, ConsentBound};
        let store = db.store().await;
        for (state, bot) in [("s1", None), ("s2", Some(4))] {
            assert_eq!(
                put_consent_state(&store, state, bot, "10.0.0.1", 1_000)
                    .await
                    .unwrap(),
                ConsentBound::Stored
            );
        }
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
        use onair::bot::Block;
        use onair::Permission;
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
        // The pool's own upkeep (a new connection preparing its statements)
        // can add a trip to any one refresh, so the typical one is judged:
        // none below four, and most of the warm ones exactly four.
        let warm = &per_refresh[10..];
        let fours = warm.iter().filter(|&&trips| trips == 4).count();
        assert!(
            warm.iter().all(|&trips| trips >= 4) && fours * 4 >= warm.len() * 3,
            "{per_refresh:?}"
        );
    }
}
