//! The host's store: every integration (a DJ's bot) with its sealed token
//! pair and its kit state, each broadcast's final tally, a bounded event
//! log per broadcast, and consent requests in flight. One module over
//! sqlx's `Any` driver with `$n` placeholders and SQL that SQLite and
//! PostgreSQL share, so the same code serves both; migrations are embedded
//! (`migrations/sqlite`).
//!
//! Token pairs are sealed before they reach the database
//! ([`crate::crypto`]) and every save is a compare-and-swap on the row's
//! `generation` (the count of pairs stored for it): a save names the
//! generation it replaces, and is refused when another writer got there
//! first.

use std::str::FromStr;
use std::time::Duration;

use onair::kit::KitState;
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
}

/// The store.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    cipher: TokenCipher,
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
    /// Connects to `url` (`sqlite://…?mode=rwc`), applies the migrations.
    pub async fn open(url: &str, cipher: TokenCipher) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let options = AnyConnectOptions::from_str(url)?;
        let sqlite = url.starts_with("sqlite:");
        let pool = AnyPoolOptions::new()
            // SQLite has one writer: one connection serializes writes
            // instead of failing them with SQLITE_BUSY.
            .max_connections(if sqlite { 1 } else { 8 })
            .acquire_timeout(Duration::from_secs(30))
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
        Ok(Store { pool, cipher })
    }

    /// Closes the pool (after the last write).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    fn integration_from(&self, row: &sqlx::any::AnyRow) -> Result<Integration, StoreError> {
        let id: i64 = row.try_get("id")?;
        let sealed: Option<String> = row.try_get("tokens")?;
        let tokens = match sealed {
            Some(sealed) => {
                let plain = self
                    .cipher
                    .open(&sealed, &row_aad(id))
                    .map_err(|source| StoreError::Open { id, source })?;
                Some(Tokens::from_json(&plain).map_err(|e| StoreError::Corrupt {
                    id,
                    what: "tokens",
                    message: e.to_string(),
                })?)
            }
            None => None,
        };
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

    /// A new integration, enabled, without tokens yet; its id.
    pub async fn create_integration(&self, now_ms: i64) -> Result<i64, StoreError> {
        let row = sqlx::query(
            "INSERT INTO integrations (id, enabled, generation, created_at_ms, updated_at_ms) \
             SELECT COALESCE(MAX(id), 0) + 1, 1, 0, $1, $1 FROM integrations RETURNING id",
        )
        .bind(now_ms)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get(0)?)
    }

    /// Stores `tokens` sealed, replacing generation `expected`: the new
    /// generation, or `None` when the row is at another generation (another
    /// writer stored a pair since; nothing changed).
    pub async fn save_tokens(
        &self,
        id: i64,
        tokens: &Tokens,
        expected: i64,
        now_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        let sealed = self.cipher.seal(tokens.to_json().as_bytes(), &row_aad(id));
        self.swap_tokens(id, Some(sealed), expected, now_ms).await
    }

    /// Forgets the pair (after a revocation), as [`save_tokens`](Self::save_tokens) does.
    pub async fn clear_tokens(
        &self,
        id: i64,
        expected: i64,
        now_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        self.swap_tokens(id, None, expected, now_ms).await
    }

    async fn swap_tokens(
        &self,
        id: i64,
        sealed: Option<String>,
        expected: i64,
        now_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        let done = sqlx::query(
            "UPDATE integrations SET tokens = $1, generation = generation + 1, updated_at_ms = $2 \
             WHERE id = $3 AND generation = $4",
        )
        .bind(sealed)
        .bind(now_ms)
        .bind(id)
        .bind(expected)
        .execute(&self.pool)
        .await?;
        Ok((done.rows_affected() == 1).then_some(expected + 1))
    }

    /// Saves the kit's memory.
    pub async fn save_state(
        &self,
        id: i64,
        state: &KitState,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE integrations SET kit_state = $1, updated_at_ms = $2 WHERE id = $3")
            .bind(state.to_json())
            .bind(now_ms)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
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

    /// Records why the bot stopped (`None`: it runs).
    pub async fn set_stop(
        &self,
        id: i64,
        stop: Option<(&str, &str)>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE integrations SET stop_code = $1, stop_message = $2, updated_at_ms = $3 \
             WHERE id = $4",
        )
        .bind(stop.map(|s| s.0.to_owned()))
        .bind(stop.map(|s| s.1.to_owned()))
        .bind(now_ms)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Names the bot on the dashboard.
    pub async fn set_label(&self, id: i64, label: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE integrations SET label = $1 WHERE id = $2")
            .bind(label.to_owned())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Saves a broadcast's final tally (a later one for the same liveId wins).
    pub async fn save_broadcast(&self, id: i64, b: &BroadcastRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO broadcasts (integration_id, live_id, ended_at_ms, tally) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (integration_id, live_id) \
             DO UPDATE SET ended_at_ms = excluded.ended_at_ms, tally = excluded.tally",
        )
        .bind(id)
        .bind(b.live_id)
        .bind(b.ended_at_ms)
        .bind(b.tally.clone())
        .execute(&self.pool)
        .await?;
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
    /// (bot, frame id, kind) is there already is left out.
    pub async fn insert_events(&self, rows: &[LogRow]) -> Result<(), StoreError> {
        /// Rows per statement (8 parameters each, far under SQLite's limit).
        const PER_STATEMENT: usize = 64;
        // One short transaction per statement: the bots' own saves (kit
        // state, tokens) wait for the one connection between them, not for
        // the whole batch.
        for chunk in rows.chunks(PER_STATEMENT) {
            let mut tx = self.pool.begin().await?;
            let values: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let p: Vec<String> = (1..=8).map(|k| format!("${}", i * 8 + k)).collect();
                    format!("({})", p.join(", "))
                })
                .collect();
            let sql = format!(
                "INSERT INTO events (integration_id, frame_id, kind, live_id, seq, at_ms, summary, detail) \
                 VALUES {} ON CONFLICT DO NOTHING",
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
                    .bind(r.detail.clone());
            }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(generation: u64) -> Tokens {
        let json = format!(
            r#"{{"format":"onair.tokens","version":1,"generation":{generation},
            "access_token":"at_SECRET{generation}","access_expires_at_ms":5000,"issued_at_ms":1000,
            "refresh_token":"rt_SECRET{generation}","refresh_expires_at_ms":90000,"scope":"live.read"}}"#
        );
        Tokens::from_json(json.as_bytes()).unwrap()
    }

    pub(crate) async fn temp_store(name: &str) -> (Store, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("onair-host-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("host.db");
        let cipher =
            TokenCipher::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        let store = Store::open(&format!("sqlite://{}?mode=rwc", path.display()), cipher)
            .await
            .unwrap();
        (store, dir)
    }

    #[tokio::test]
    async fn tokens_are_sealed_at_rest_and_saved_by_compare_and_swap() {
        let (store, dir) = temp_store("tokens").await;
        let id = store.create_integration(10).await.unwrap();
        assert_eq!(store.create_integration(11).await.unwrap(), id + 1);
        assert_eq!(
            store.save_tokens(id, &tokens(1), 0, 20).await.unwrap(),
            Some(1)
        );
        // A writer that read generation 0 lost the race: nothing changes.
        assert_eq!(
            store.save_tokens(id, &tokens(9), 0, 21).await.unwrap(),
            None
        );
        assert_eq!(
            store.save_tokens(id, &tokens(2), 1, 22).await.unwrap(),
            Some(2)
        );
        let row = store.integration(id).await.unwrap().unwrap();
        assert_eq!(row.generation, 2);
        assert_eq!(row.tokens.unwrap().generation(), 2);
        assert!(row.enabled);
        store.close().await;
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
        }
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("SECRET"), "a token in the database files");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn a_pair_sealed_for_another_row_does_not_open() {
        let (store, dir) = temp_store("rows").await;
        let a = store.create_integration(1).await.unwrap();
        let b = store.create_integration(1).await.unwrap();
        store.save_tokens(a, &tokens(1), 0, 2).await.unwrap();
        sqlx::query("UPDATE integrations SET tokens = (SELECT tokens FROM integrations WHERE id = $1) WHERE id = $2")
            .bind(a)
            .bind(b)
            .execute(&store.pool)
            .await
            .unwrap();
        let err = store.integration(b).await.unwrap_err();
        assert!(matches!(err, StoreError::Open { .. }), "{err}");
        assert!(!err.to_string().contains("SECRET"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn the_event_log_is_deduplicated_by_frame_and_bounded_per_broadcast() {
        let (store, dir) = temp_store("events").await;
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
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn a_consent_state_is_taken_once_and_expires() {
        let (store, dir) = temp_store("states").await;
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
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn state_label_stop_and_broadcasts_round_trip() {
        let (store, dir) = temp_store("misc").await;
        let id = store.create_integration(1).await.unwrap();
        let state =
            KitState::from_json(r#"{"format":"onair.kit","version":1,"live_id":3}"#).unwrap();
        store.save_state(id, &state, 2).await.unwrap();
        store.set_label(id, "Mina").await.unwrap();
        store
            .set_stop(id, Some(("reauthorize", "re-authorize: …")), 3)
            .await
            .unwrap();
        store.set_enabled(id, false, 4).await.unwrap();
        let b = BroadcastRow {
            live_id: 3,
            ended_at_ms: 9,
            tally: "{}".to_owned(),
        };
        store.save_broadcast(id, &b).await.unwrap();
        store
            .save_broadcast(
                id,
                &BroadcastRow {
                    tally: "{\"hearts\":1}".to_owned(),
                    ..b.clone()
                },
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
        store.set_stop(id, None, 5).await.unwrap();
        assert!(store.integration(id).await.unwrap().unwrap().stop.is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
