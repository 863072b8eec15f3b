//! The refresh gate: one refresh per token across replicas.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use onair_tokio::{BeforeRefresh, GateFuture, RefreshGate};

use crate::store::Store;

/// Before a refresh: in one statement, the stored pair and this replica's
/// lease. A newer stored pair is handed back (the spent refresh token is
/// never sent); a lease that is not this replica's, or has less than
/// [`crate::lease::REFRESH_MARGIN_MS`] left, refuses the refresh (the bot
/// retries after a backoff, by then stopped here or renewed).
pub(super) struct StoreGate {
    pub(super) store: Store,
    pub(super) id: i64,
    pub(super) lease: i64,
    pub(super) generation: Arc<AtomicI64>,
}

impl RefreshGate for StoreGate {
    fn before_refresh(&self, generation: u64) -> GateFuture {
        let store = self.store.clone();
        let (id, lease) = (self.id, self.lease);
        let row_generation = Arc::clone(&self.generation);
        Box::pin(async move {
            let refused = |why: &str| {
                tracing::warn!(bot = id, "refresh held back: {why}");
                onair_tokio::StoreError::Io(std::io::Error::other(why.to_owned()))
            };
            let read = match tokio::time::timeout(
                Duration::from_secs(3),
                store.gate_read(id, lease),
            )
            .await
            {
                Ok(Ok(read)) => read,
                Ok(Err(e)) => return Err(refused(&e.to_string())),
                Err(_) => return Err(refused("the store did not answer in 3 s")),
            };
            match read.lease_left_ms {
                None => return Err(refused("the lease is another replica's")),
                Some(left) if left < crate::lease::REFRESH_MARGIN_MS => {
                    return Err(refused("the lease is about to expire"))
                }
                Some(_) => {}
            }
            if let Some(tokens) = read.tokens {
                if tokens.generation() > generation {
                    row_generation.store(read.generation, Ordering::Release);
                    tracing::info!(
                        bot = id,
                        generation = tokens.generation(),
                        "took the stored newer pair"
                    );
                    return Ok(BeforeRefresh::Newer(tokens));
                }
            }
            Ok(BeforeRefresh::Proceed)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use onair::Tokens;

    fn pair(generation: u64) -> Tokens {
        let json = format!(
            r#"{{"format":"onair.tokens","version":1,"generation":{generation},
            "access_token":"A{generation}","access_expires_at_ms":5000,"issued_at_ms":1000,
            "refresh_token":"R{generation}","refresh_expires_at_ms":90000,"scope":"live.read"}}"#
        );
        Tokens::from_json(json.as_bytes()).expect("pair")
    }

    async fn gate_on(db: &crate::testdb::Db) {
        let store = db.store().await;
        let id = store.create_integration(1).await.expect("row");
        store
            .save_tokens(id, &pair(1), 0, 1, 2)
            .await
            .expect("save");
        let generation = Arc::new(AtomicI64::new(1));
        let gate = |lease| StoreGate {
            store: store.clone(),
            id,
            lease,
            generation: Arc::clone(&generation),
        };
        // The bot's pair is the stored one: refresh.
        assert!(matches!(
            gate(1).before_refresh(1).await,
            Ok(BeforeRefresh::Proceed)
        ));
        // Another process refreshed (generation 2 stored): take it.
        store
            .save_tokens(id, &pair(2), 1, 1, 3)
            .await
            .expect("save");
        match gate(1).before_refresh(1).await {
            Ok(BeforeRefresh::Newer(t)) => assert_eq!(t.generation(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            generation.load(Ordering::Acquire),
            2,
            "the row's generation"
        );
        // Not this replica's lease: no refresh at all.
        assert!(gate(7).before_refresh(2).await.is_err());
        let other = db.store().await;
        other.steal_lease(id, 15_000).await.expect("steal");
        assert!(gate(1).before_refresh(2).await.is_err());
        // A lease about to expire: no refresh either.
        let short = store
            .create_integration_leased(1, 5_000)
            .await
            .expect("row");
        store
            .save_tokens(short, &pair(1), 0, 1, 2)
            .await
            .expect("save");
        let near_end = StoreGate {
            store: store.clone(),
            id: short,
            lease: 1,
            generation: Arc::new(AtomicI64::new(1)),
        };
        assert!(near_end.before_refresh(1).await.is_err());
    }

    crate::testdb::on_both!(refresh_gate, gate_on);
}
