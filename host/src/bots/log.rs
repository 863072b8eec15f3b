//! The event log's writer: batches, one transaction each, bounded per
//! broadcast.

use std::collections::HashMap;
use std::time::Duration;

use onair::FrameId;
use tokio::sync::{mpsc, oneshot};

use super::Hub;
use crate::store::{LogRow, Store};

pub(super) enum LogMsg {
    Row(LogRow),
    Flush(oneshot::Sender<()>),
}

/// Writes the event log in batches, one transaction each, and keeps each
/// broadcast's log to `keep` rows.
pub(super) async fn log_writer(
    hub: std::sync::Weak<Hub>,
    store: Store,
    mut rx: mpsc::Receiver<LogMsg>,
    keep: u32,
) {
    let mut since_prune: HashMap<(i64, i64), u32> = HashMap::new();
    let mut batch = Vec::new();
    let mut msgs = Vec::new();
    loop {
        msgs.clear();
        if rx.recv_many(&mut msgs, 2048).await == 0 {
            break;
        }
        let mut flushes = Vec::new();
        for msg in msgs.drain(..) {
            match msg {
                LogMsg::Row(row) => batch.push(row),
                LogMsg::Flush(done) => flushes.push(done),
            }
        }
        if !batch.is_empty() {
            // A row the database refuses is dropped alone (the store writes
            // a failed statement's rows one by one): one bot's bad row never
            // costs another bot its log. Retried whole only when the
            // database itself failed.
            let mut tries = 0;
            loop {
                match store.insert_events(&batch).await {
                    Ok(0) => break,
                    Ok(dropped) => {
                        if let Some(hub) = hub.upgrade() {
                            hub.metrics.store_errors.inc_by(dropped as u64);
                        }
                        tracing::error!(rows = dropped, "event log: rows refused by the database");
                        break;
                    }
                    Err(e) => {
                        tries += 1;
                        if let Some(hub) = hub.upgrade() {
                            hub.metrics.store_errors.inc();
                        }
                        if tries >= 3 {
                            tracing::error!(error = %e, rows = batch.len(), "event log: rows dropped");
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
            for row in batch.drain(..) {
                *since_prune
                    .entry((row.integration_id, row.live_id))
                    .or_default() += 1;
            }
            let due: Vec<(i64, i64)> = since_prune
                .iter()
                .filter(|(_, n)| **n >= (keep / 2).max(16))
                .map(|(k, _)| *k)
                .collect();
            for key in due {
                since_prune.remove(&key);
                if let Err(e) = store.prune_events(key.0, key.1, keep).await {
                    tracing::warn!(error = %e, "event log: prune failed");
                }
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

pub(super) fn frame_key(id: Option<&FrameId>, seq: i64) -> String {
    id.map_or_else(|| format!("local-{seq}"), |f| f.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_without_an_id_get_a_unique_key() {
        assert_eq!(frame_key(None, 7), "local-7");
        assert_eq!(frame_key(Some(&FrameId::new("1-0")), 7), "1-0");
    }
}
