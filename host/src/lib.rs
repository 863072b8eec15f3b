//! # onair-host — many DJs' bots in one service
//!
//! `onair host --config host.toml` runs one bot per DJ who connected, on
//! the core and `onair-tokio`, configured rather than written:
//!
//! - **the consent flow** ([`web`]): `/connect` sends the DJ to the
//!   service's consent page with a CSRF `state`; `/callback` checks it,
//!   exchanges the code exactly once, stores the pair and starts the bot,
//!   and gives the DJ a session bound to the bots it made ([`tenants`]):
//!   each DJ sees and acts on their own bots only, the admin on all;
//! - **the store** ([`store`]): SQLite or PostgreSQL through sqlx with
//!   embedded migrations, token pairs sealed at rest ([`crypto`]) and saved
//!   before the bot uses them (compare-and-swap on a generation), each bot's
//!   kit state, final tallies, a bounded event log per broadcast;
//! - **replicas** ([`replicas`]): on PostgreSQL, several processes share
//!   the bots through leases fenced on every write, one refresh per token,
//!   one daily budget per app, a dead replica's bots taken in batches
//!   paced by the probe budget;
//! - **the bots** ([`bots`]): one driver per enabled integration, restored
//!   at start paced by the probe budget, answering in chat with the configured kit
//!   and replies, stopping for consent with a re-connect link, disabled,
//!   enabled or revoked by their DJ or the admin; a row that does not
//!   open stops its bot alone;
//! - **the dashboard** ([`pages`]): server-rendered HTML with live updates
//!   over SSE; `tracing` logs; Prometheus metrics ([`metrics`]); a graceful
//!   stop on SIGTERM (streams closed, the last pair and state saved);
//! - **limits** ([`limits`]): hyper serves each connection with timeouts,
//!   caps on connections and live streams per client, per session and in
//!   all (the latter from the descriptor limit), security headers on every
//!   response, the pages' script and style as files ([`assets`]).
//!
//! The operator's page is `host/README.md`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod assets;
pub mod bots;
pub mod config;
pub mod crypto;
pub mod lease;
pub mod limits;
pub mod metrics;
pub mod pages;
pub mod probe;
pub mod replicas;
pub mod store;
pub mod tenants;
#[cfg(test)]
mod testdb;
pub mod text;
pub mod traces;
pub mod web;

use std::future::Future;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use onair_tokio::{Clock, SystemClock};
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use config::{ConfigError, HostConfig};

/// Why the host could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The store.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The listening socket.
    #[error("cannot listen: {0}")]
    Listen(#[from] std::io::Error),
}

/// Runs the host on `listener` until `stop` resolves: every stored bot
/// restored, the web side served; then the drain: every bot stopped and
/// saved, the leases released, while the web side still answers (`/readyz`
/// 503 "draining", live streams ended, nothing that would start or change
/// a bot); then the web side closed (within 5 s). `clock` is the bots'
/// time (the system's in production, an emulator's virtual clock in
/// tests).
pub async fn serve(
    config: HostConfig,
    listener: TcpListener,
    clock: Arc<dyn Clock>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HostError> {
    run(config, listener, clock, stop, std::future::ready(())).await
}

/// [`serve`], with `drained` awaited once the bots are saved and the
/// leases released, before the web side closes (the tests hold the drain
/// there; [`serve`] passes a ready future).
async fn run(
    config: HostConfig,
    listener: TcpListener,
    clock: Arc<dyn Clock>,
    stop: impl Future<Output = ()> + Send + 'static,
    drained: impl Future<Output = ()>,
) -> Result<(), HostError> {
    let config = Arc::new(config);
    // What concerns every bot stops the start, said as such: a database
    // file that does not open or read, a key that opens none of the stored
    // pairs. A row that does not open stops its bot alone.
    let store = store::Store::open(config.database_url.expose(), config.cipher.clone()).await?;
    if let Err(e) = store.check_key().await {
        store.close().await;
        return Err(e.into());
    }
    let hub = bots::Hub::new(Arc::clone(&config), store.clone(), clock).await?;
    let restored = hub.restore().await?;
    let (keeper_stop, keeper_stopping) = watch::channel(false);
    let keeper = tokio::spawn(replicas::keep(Arc::clone(&hub), keeper_stopping.clone()));
    let probes = tokio::spawn(replicas::keep_probes(
        Arc::clone(&hub),
        keeper_stopping.clone(),
    ));
    let quota = tokio::spawn(replicas::keep_quota(Arc::clone(&hub), keeper_stopping));
    tracing::info!(
        listen = %listener.local_addr()?,
        public_url = %config.public_url,
        restored,
        replica = store.replica(),
        spread_ms = config.start_spread_ms,
        "onair host running"
    );
    // `stopping`: the web side drains (`/readyz` 503, live streams end);
    // `closing`: the listener closes, once the bots are saved and the
    // leases released (a load balancer meanwhile reads "draining", not a
    // refused connection).
    let (stopping_tx, stopping) = watch::channel(false);
    let (closing_tx, closing) = watch::channel(false);
    let app = web::router(Arc::clone(&hub), stopping);
    let server = tokio::spawn(limits::serve(listener, app, config.limits.clone(), closing));
    stop.await;
    tracing::info!("stopping: draining, closing streams and saving every bot");
    let _ = stopping_tx.send(true);
    let _ = keeper_stop.send(true);
    let _ = keeper.await;
    let _ = quota.await;
    let _ = probes.await;
    hub.shutdown().await;
    // The others take this replica's bots at once.
    if let Err(e) = store.leave().await {
        tracing::warn!(error = %e, "leases not released (they expire)");
    }
    drained.await;
    let _ = closing_tx.send(true);
    match tokio::time::timeout(std::time::Duration::from_secs(5), server).await {
        Ok(Err(e)) => tracing::warn!(error = %e, "web side ended with an error"),
        Err(_) => tracing::warn!("web side did not close within 5 s"),
        Ok(Ok(())) => {}
    }
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// `onair host --config FILE`: exit 2 for a bad configuration, 1 when the
/// host cannot run, 0 after a clean stop (SIGTERM or Ctrl-C).
pub fn main(config_path: &Path) -> ExitCode {
    let config = match HostConfig::load(config_path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("onair host: {}: {e}", config_path.display());
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("onair host: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The exporter sends from the runtime.
    let traces = match &config.traces {
        Some(c) => {
            let _inside = runtime.enter();
            match traces::Traces::start(c) {
                Ok(t) => Some(t),
                Err(e) => {
                    eprintln!("onair host: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        None => None,
    };
    {
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        use tracing_subscriber::Layer as _;
        let filter = tracing_subscriber::EnvFilter::try_from_env("ONAIR_HOST_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
        let log = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_filter(filter);
        let _ = tracing_subscriber::registry()
            .with(log)
            .with(traces.as_ref().map(traces::Traces::layer))
            .try_init();
    }
    runtime.block_on(async move {
        let listener = match TcpListener::bind(config.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("onair host: cannot listen on {}: {e}", config.listen);
                return ExitCode::FAILURE;
            }
        };
        let ran = serve(config, listener, Arc::new(SystemClock), stop_signal()).await;
        // The last spans are sent before the process ends.
        if let Some(traces) = traces {
            traces.shutdown().await;
        }
        match ran {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("onair host: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// SIGTERM or Ctrl-C.
async fn stop_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};
    use tokio::sync::oneshot;

    /// A host over a fresh SQLite store (no bot, no service reached).
    fn config(db: &testdb::SqliteDb) -> HostConfig {
        let app = (
            "http://127.0.0.1:9",
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "secret",
        );
        testdb::config_of(&db.url, 200, app)
    }

    /// The status and text of `GET url` over a new TCP connection, or
    /// `None` when the connection is refused.
    async fn get(url: &str) -> Option<(u16, String)> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client");
        match client.get(url).send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                Some((status, r.text().await.expect("text")))
            }
            Err(e) if e.is_connect() => None,
            Err(e) => panic!("GET {url}: {e}"),
        }
    }

    /// A stop: while the host drains (held here once its bots are saved and
    /// its leases released) the listener still accepts, `/readyz` answers
    /// 503 "draining", `/healthz` ok and the consent flow 503; once the
    /// drain ends the port is closed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_draining_host_answers_readyz_503_until_its_bots_are_saved_then_closes() {
        let db = testdb::SqliteDb::new("drain");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("listen");
        let addr = listener.local_addr().expect("addr");
        let base = format!("http://{addr}");
        let (stop, stopped) = oneshot::channel::<()>();
        let (reached_tx, reached) = oneshot::channel::<()>();
        let (release, released) = oneshot::channel::<()>();
        let drained = async move {
            let _ = reached_tx.send(());
            let _ = released.await;
        };
        let host = tokio::spawn(run(
            config(&db),
            listener,
            Arc::new(SystemClock),
            async move {
                let _ = stopped.await;
            },
            drained,
        ));
        let deadline = Instant::now() + Duration::from_secs(15);
        while get(&format!("{base}/readyz")).await != Some((200, "ready".to_owned())) {
            assert!(Instant::now() < deadline, "the host is not ready in 15 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = stop.send(());
        // The bots are saved and the leases released: the web side answers.
        tokio::time::timeout(Duration::from_secs(45), reached)
            .await
            .expect("the drain ends in time")
            .expect("the drain");
        assert_eq!(
            get(&format!("{base}/readyz")).await,
            Some((503, "draining: the host is stopping".to_owned()))
        );
        assert_eq!(
            get(&format!("{base}/healthz")).await,
            Some((200, "ok".to_owned()))
        );
        let (status, page) = get(&format!("{base}/connect")).await.expect("an answer");
        assert_eq!(status, 503);
        assert!(page.contains("The host is stopping"), "{page}");
        assert!(!host.is_finished());
        // The drain over: the listener closes, the host ends cleanly.
        let _ = release.send(());
        tokio::time::timeout(Duration::from_secs(10), host)
            .await
            .expect("the host ends in time")
            .expect("the host task")
            .expect("a clean stop");
        assert_eq!(
            get(&format!("{base}/readyz")).await,
            None,
            "the port is closed"
        );
        assert!(std::net::TcpStream::connect(addr).is_err());
    }
}
