//! Tenants in the store: DJs, the bots each owns, sessions (a DJ's or the
//! admin's), one-time sign-in links, and the bounds on unfinished consent
//! requests. Every secret (a session id, a sign-in code, a consent state) is
//! stored as its SHA-256 only; the raw value lives in the browser's cookie or
//! the link and nowhere else.

use sha2::{Digest, Sha256};

use crate::store::{Store, StoreError};

/// A DJ's session lasts this long from the consent (or sign-in) that made it;
/// it does not slide.
pub const DJ_SESSION_MS: i64 = 30 * 24 * 3_600_000;
/// An admin session lasts this long from its login.
pub const ADMIN_SESSION_MS: i64 = 12 * 3_600_000;
/// A sign-in link is good for this long, once.
pub const SIGNIN_MS: i64 = 10 * 60 * 1000;
/// A consent request is good for this long.
pub const CONSENT_TTL_MS: i64 = 10 * 60 * 1000;
/// Unfinished consent requests per client address.
pub const CONSENTS_PER_CLIENT: i64 = 20;
/// Unfinished consent requests in all.
pub const CONSENTS_IN_ALL: i64 = 10_000;

/// SHA-256, hex.
pub fn digest(value: &str) -> String {
    Sha256::digest(value.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whose session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    /// A DJ's (the id of the DJ).
    Dj(i64),
    /// The admin's.
    Admin,
}

/// Who disabled a bot. The `disabled_by` column holds the word
/// ([`DisabledBy::word`]); NULL there means the bot was not disabled by
/// either (it is enabled, or it stopped for another reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisabledBy {
    /// The admin: only the admin enables the bot again.
    Admin,
    /// The bot's DJ (or anyone who sees the bot).
    Dj,
}

impl DisabledBy {
    /// The word stored in the column.
    pub fn word(self) -> &'static str {
        match self {
            DisabledBy::Admin => "admin",
            DisabledBy::Dj => "dj",
        }
    }

    /// The stored word read back. A word this host did not write reads as
    /// [`DisabledBy::Admin`], the safe side: an admin's disable holds until
    /// the admin lifts it, so a damaged or unknown value never lets a DJ
    /// enable a bot the admin may have disabled.
    pub fn from_word(word: &str) -> Self {
        match word {
            "dj" => DisabledBy::Dj,
            _ => DisabledBy::Admin,
        }
    }
}

/// Why a consent request was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsentBound {
    /// Stored.
    Stored,
    /// This client address has too many unfinished ones.
    PerClient,
    /// The host has too many unfinished ones.
    InAll,
}

async fn new_id(store: &Store, table: &str, now_ms: i64) -> Result<i64, StoreError> {
    let sql = format!(
        "INSERT INTO {table} (id, created_at_ms) SELECT COALESCE(MAX(id), 0) + 1, $1 FROM {table} \
         RETURNING id"
    );
    let mut tries = 0;
    loop {
        match sqlx::query_scalar::<_, i64>(&sql)
            .bind(now_ms)
            .fetch_one(store.pool())
            .await
        {
            Ok(id) => return Ok(id),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() && tries < 10 => tries += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A new DJ; its id.
pub async fn new_dj(store: &Store, now_ms: i64) -> Result<i64, StoreError> {
    new_id(store, "djs", now_ms).await
}

/// Bot `bot` belongs to DJ `dj` from now on.
pub async fn set_owner(store: &Store, bot: i64, dj: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE integrations SET dj_id = $1 WHERE id = $2")
        .bind(dj)
        .bind(bot)
        .execute(store.pool())
        .await?;
    Ok(())
}

/// The DJ who owns bot `bot` (`None`: no such bot, or no owner).
pub async fn owner(store: &Store, bot: i64) -> Result<Option<i64>, StoreError> {
    let dj: Option<Option<i64>> =
        sqlx::query_scalar("SELECT dj_id FROM integrations WHERE id = $1")
            .bind(bot)
            .fetch_optional(store.pool())
            .await?;
    Ok(dj.flatten())
}

/// The bots of DJ `dj`, by id.
pub async fn bots_of(store: &Store, dj: i64) -> Result<Vec<i64>, StoreError> {
    Ok(
        sqlx::query_scalar("SELECT id FROM integrations WHERE dj_id = $1 ORDER BY id")
            .bind(dj)
            .fetch_all(store.pool())
            .await?,
    )
}

/// Forgets bot `bot` (its consent failed before it ever ran): the row and,
/// by cascade, anything written for it.
pub async fn delete_bot(store: &Store, bot: i64) -> Result<(), StoreError> {
    for sql in [
        "DELETE FROM events WHERE integration_id = $1",
        "DELETE FROM broadcasts WHERE integration_id = $1",
        "DELETE FROM integrations WHERE id = $1",
    ] {
        sqlx::query(sql).bind(bot).execute(store.pool()).await?;
    }
    Ok(())
}

/// Who disabled bot `bot` (`None`: no such bot, or not disabled by either).
pub async fn disabled_by(store: &Store, bot: i64) -> Result<Option<DisabledBy>, StoreError> {
    let word: Option<Option<String>> =
        sqlx::query_scalar("SELECT disabled_by FROM integrations WHERE id = $1")
            .bind(bot)
            .fetch_optional(store.pool())
            .await?;
    Ok(word.flatten().as_deref().map(DisabledBy::from_word))
}

/// Notes who disabled bot `bot` (`None`: it was enabled).
pub async fn set_disabled_by(
    store: &Store,
    bot: i64,
    by: Option<DisabledBy>,
) -> Result<(), StoreError> {
    sqlx::query("UPDATE integrations SET disabled_by = $1 WHERE id = $2")
        .bind(by.map(DisabledBy::word))
        .bind(bot)
        .execute(store.pool())
        .await?;
    Ok(())
}

/// A new session of `kind` for `ttl_ms`: its raw id (for the cookie; only its
/// hash is stored).
pub async fn new_session(
    store: &Store,
    kind: SessionKind,
    raw: &str,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<(), StoreError> {
    // Expired sessions go as new ones come.
    sqlx::query("DELETE FROM sessions WHERE expires_ms <= $1")
        .bind(now_ms)
        .execute(store.pool())
        .await?;
    let (word, dj) = match kind {
        SessionKind::Dj(id) => ("dj", Some(id)),
        SessionKind::Admin => ("admin", None),
    };
    sqlx::query(
        "INSERT INTO sessions (id_hash, kind, dj_id, created_at_ms, expires_ms) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(digest(raw))
    .bind(word)
    .bind(dj)
    .bind(now_ms)
    .bind(now_ms.saturating_add(ttl_ms))
    .execute(store.pool())
    .await?;
    Ok(())
}

/// The session whose raw id is `raw`, when it exists and has not expired.
pub async fn session(
    store: &Store,
    raw: &str,
    now_ms: i64,
) -> Result<Option<SessionKind>, StoreError> {
    let row: Option<(String, Option<i64>)> =
        sqlx::query_as("SELECT kind, dj_id FROM sessions WHERE id_hash = $1 AND expires_ms > $2")
            .bind(digest(raw))
            .bind(now_ms)
            .fetch_optional(store.pool())
            .await?;
    let Some((kind, dj)) = row else {
        return Ok(None);
    };
    Ok(match (kind.as_str(), dj) {
        ("admin", _) => Some(SessionKind::Admin),
        ("dj", Some(dj)) => Some(SessionKind::Dj(dj)),
        _ => None,
    })
}

/// Ends the session whose raw id is `raw`.
pub async fn end_session(store: &Store, raw: &str) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM sessions WHERE id_hash = $1")
        .bind(digest(raw))
        .execute(store.pool())
        .await?;
    Ok(())
}

/// Ends every session (and sign-in link) of DJ `dj`; how many sessions.
pub async fn end_dj_sessions(store: &Store, dj: i64) -> Result<u64, StoreError> {
    let done = sqlx::query("DELETE FROM sessions WHERE kind = 'dj' AND dj_id = $1")
        .bind(dj)
        .execute(store.pool())
        .await?;
    sqlx::query("DELETE FROM signin_links WHERE dj_id = $1")
        .bind(dj)
        .execute(store.pool())
        .await?;
    Ok(done.rows_affected())
}

/// Stores a sign-in link's code (hashed) for DJ `dj`, good once for
/// [`SIGNIN_MS`].
pub async fn new_signin(store: &Store, dj: i64, raw: &str, now_ms: i64) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM signin_links WHERE expires_ms <= $1")
        .bind(now_ms)
        .execute(store.pool())
        .await?;
    sqlx::query("INSERT INTO signin_links (code_hash, dj_id, expires_ms) VALUES ($1, $2, $3)")
        .bind(digest(raw))
        .bind(dj)
        .bind(now_ms.saturating_add(SIGNIN_MS))
        .execute(store.pool())
        .await?;
    Ok(())
}

/// Takes a sign-in code back, once: its DJ when it was there and unexpired
/// (it is gone after this either way).
pub async fn take_signin(store: &Store, raw: &str, now_ms: i64) -> Result<Option<i64>, StoreError> {
    let row: Option<(i64, i64)> =
        sqlx::query_as("DELETE FROM signin_links WHERE code_hash = $1 RETURNING dj_id, expires_ms")
            .bind(digest(raw))
            .fetch_optional(store.pool())
            .await?;
    Ok(row
        .filter(|(_, expires)| *expires > now_ms)
        .map(|(dj, _)| dj))
}

/// Remembers a consent request (`bot`: a re-connect of that bot) made from
/// `client` (an address), within the bounds: expired requests are
/// forgotten first, then at most [`CONSENTS_PER_CLIENT`] unfinished ones
/// per address and [`CONSENTS_IN_ALL`] in all.
pub async fn put_consent_state(
    store: &Store,
    state: &str,
    bot: Option<i64>,
    client: &str,
    now_ms: i64,
) -> Result<ConsentBound, StoreError> {
    put_bounded(
        store,
        state,
        bot,
        client,
        now_ms,
        (CONSENTS_PER_CLIENT, CONSENTS_IN_ALL),
    )
    .await
}

async fn put_bounded(
    store: &Store,
    state: &str,
    bot: Option<i64>,
    client: &str,
    now_ms: i64,
    (per_client, in_all): (i64, i64),
) -> Result<ConsentBound, StoreError> {
    sqlx::query("DELETE FROM oauth_states WHERE created_at_ms < $1")
        .bind(now_ms - CONSENT_TTL_MS)
        .execute(store.pool())
        .await?;
    let here: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_states WHERE client = $1")
        .bind(client.to_owned())
        .fetch_one(store.pool())
        .await?;
    if here >= per_client {
        return Ok(ConsentBound::PerClient);
    }
    let all: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_states")
        .fetch_one(store.pool())
        .await?;
    if all >= in_all {
        return Ok(ConsentBound::InAll);
    }
    sqlx::query(
        "INSERT INTO oauth_states (state_hash, integration_id, created_at_ms, client) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(digest(state))
    .bind(bot)
    .bind(now_ms)
    .bind(client.to_owned())
    .execute(store.pool())
    .await?;
    Ok(ConsentBound::Stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdb::{on_both, Db};

    on_both!(sessions, sessions_are_hashed_expire_and_end);
    async fn sessions_are_hashed_expire_and_end(db: &Db) {
        let store = &db.store().await;
        let dj = new_dj(store, 1_000).await.expect("dj");
        let other = new_dj(store, 1_000).await.expect("dj");
        assert_ne!(dj, other);
        new_session(store, SessionKind::Dj(dj), "raw-a", 1_000, 5_000)
            .await
            .expect("session");
        new_session(store, SessionKind::Admin, "raw-b", 1_000, 5_000)
            .await
            .expect("session");
        assert_eq!(
            session(store, "raw-a", 2_000).await.expect("read"),
            Some(SessionKind::Dj(dj))
        );
        assert_eq!(
            session(store, "raw-b", 2_000).await.expect("read"),
            Some(SessionKind::Admin)
        );
        assert_eq!(session(store, "raw-a", 6_000).await.expect("read"), None);
        assert_eq!(session(store, "nope", 2_000).await.expect("read"), None);
        let stored: Vec<String> = sqlx::query_scalar("SELECT id_hash FROM sessions")
            .fetch_all(store.pool())
            .await
            .expect("rows");
        assert!(stored.iter().all(|h| h.len() == 64 && !h.contains("raw")));
        assert_eq!(end_dj_sessions(store, dj).await.expect("end"), 1);
        assert_eq!(session(store, "raw-a", 2_000).await.expect("read"), None);
        end_session(store, "raw-b").await.expect("end");
        assert_eq!(session(store, "raw-b", 2_000).await.expect("read"), None);

        new_signin(store, dj, "code-1", 1_000).await.expect("link");
        assert_eq!(
            take_signin(store, "code-1", 2_000).await.expect("take"),
            Some(dj)
        );
        assert_eq!(
            take_signin(store, "code-1", 2_000).await.expect("take"),
            None
        );
        new_signin(store, dj, "code-2", 1_000).await.expect("link");
        assert_eq!(
            take_signin(store, "code-2", 1_000 + SIGNIN_MS)
                .await
                .expect("take"),
            None,
            "expired"
        );
    }

    on_both!(disabled, who_disabled_a_bot_is_stored_as_a_word);
    async fn who_disabled_a_bot_is_stored_as_a_word(db: &Db) {
        let store = &db.store().await;
        let bot = store.create_integration(1_000).await.expect("bot");
        assert_eq!(disabled_by(store, bot).await.expect("read"), None);
        assert_eq!(
            disabled_by(store, bot + 1).await.expect("read"),
            None,
            "no such bot"
        );
        for (by, word) in [(DisabledBy::Admin, "admin"), (DisabledBy::Dj, "dj")] {
            set_disabled_by(store, bot, Some(by)).await.expect("set");
            assert_eq!(disabled_by(store, bot).await.expect("read"), Some(by));
            // The column holds the same words as before the enum.
            let stored: Option<String> =
                sqlx::query_scalar("SELECT disabled_by FROM integrations WHERE id = $1")
                    .bind(bot)
                    .fetch_one(store.pool())
                    .await
                    .expect("row");
            assert_eq!(stored.as_deref(), Some(word));
        }
        // A word the host did not write reads as the admin's.
        sqlx::query("UPDATE integrations SET disabled_by = 'someone' WHERE id = $1")
            .bind(bot)
            .execute(store.pool())
            .await
            .expect("update");
        assert_eq!(
            disabled_by(store, bot).await.expect("read"),
            Some(DisabledBy::Admin)
        );
        set_disabled_by(store, bot, None).await.expect("set");
        assert_eq!(disabled_by(store, bot).await.expect("read"), None);
    }

    on_both!(consent_bounds, consent_requests_are_bounded_per_client);
    async fn consent_requests_are_bounded_per_client(db: &Db) {
        let store = &db.store().await;
        for i in 0..CONSENTS_PER_CLIENT {
            assert_eq!(
                put_consent_state(store, &format!("s{i}"), None, "10.0.0.1", 1_000)
                    .await
                    .expect("put"),
                ConsentBound::Stored
            );
        }
        assert_eq!(
            put_consent_state(store, "over", None, "10.0.0.1", 1_000)
                .await
                .expect("put"),
            ConsentBound::PerClient
        );
        assert_eq!(
            put_consent_state(store, "other", None, "10.0.0.2", 1_000)
                .await
                .expect("put"),
            ConsentBound::Stored
        );
        // The expired ones go first: the address may ask again.
        assert_eq!(
            put_consent_state(store, "later", None, "10.0.0.1", 1_001 + CONSENT_TTL_MS)
                .await
                .expect("put"),
            ConsentBound::Stored
        );
        // In all: the same rule over every address (a small bound here; the
        // host's is CONSENTS_IN_ALL).
        let t = 10 * CONSENT_TTL_MS;
        for i in 0..4 {
            let client = format!("10.1.0.{i}");
            assert_eq!(
                put_bounded(store, &format!("a{i}"), None, &client, t, (2, 4))
                    .await
                    .expect("put"),
                ConsentBound::Stored
            );
        }
        assert_eq!(
            put_bounded(store, "a-over", None, "10.1.0.9", t, (2, 4))
                .await
                .expect("put"),
            ConsentBound::InAll
        );
        assert_eq!(
            put_bounded(
                store,
                "a-later",
                None,
                "10.1.0.9",
                t + CONSENT_TTL_MS + 1,
                (2, 4)
            )
            .await
            .expect("put"),
            ConsentBound::Stored,
            "expired ones first"
        );
        assert_eq!((CONSENTS_PER_CLIENT, CONSENTS_IN_ALL), (20, 10_000));
    }
}
