//! Two replicas over one PostgreSQL, through their web sides: every DJ
//! consents through replica 0 while replica 1 is live, so replica 0 holds
//! far more than its share while the consents run and hands its surplus
//! over meanwhile. No consent's bot may be handed over before its pair is
//! stored (the consent's hold): every consent ends in a running bot, and
//! the bots end shared between the replicas.
//!
//! Replica 0 reaches the service through a proxy that delays its requests
//! (250 ms): a code exchange then lasts long enough for the lease keeper's
//! looks (every 2 s) to find some running. Without the hold, about one
//! consent in ten fails there with 502 ("the bot stopped before a pair
//! came").
//!
//! Without PostgreSQL's server binaries the test says SKIPPED and passes.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{browser, location, Setup, KEY};
use tokio::sync::Semaphore;

// The tests' PostgreSQL cluster is the library's test module (`testdb`:
// `initdb` and `pg_ctl` in a temporary folder), compiled into this test
// too; the paths it names through `crate::` are the library's.
#[allow(unused_imports)]
use onair_host::{bots, config, crypto, store, HostConfig};
#[allow(dead_code, unused_macros, unused_imports)]
#[path = "../src/testdb.rs"]
mod testdb;

/// DJs consenting, all through replica 0.
const DJS: usize = 100;
/// One consent starts every this often: 100 over 4 s, so that several of
/// the lease keeper's looks (every 2 s) find consents running, the newest
/// bots (the ones it would hand over first) among them.
const EVERY: Duration = Duration::from_millis(40);
/// Consents running at once, at most.
const AT_ONCE: usize = 24;

/// What replica 0 sends the service is held this long (a service a little
/// farther away): each consent's code exchange lasts that long at least,
/// so that the lease keeper's looks find exchanges running.
const SERVICE_DELAY: Duration = Duration::from_millis(250);

/// A TCP proxy to 127.0.0.1:`to` that passes on what a client sends
/// `delay` after it came (in order), the answers at once. Its port.
async fn slow_proxy(to: u16, delay: Duration) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await else {
                continue;
            };
            let (mut from_client, mut to_client) = client.into_split();
            let (mut from_server, mut to_server) = server.into_split();
            let (held, mut due) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                while let Ok(n) = from_client.read(&mut buf).await {
                    if n == 0
                        || held
                            .send((Instant::now() + delay, buf[..n].to_vec()))
                            .is_err()
                    {
                        break;
                    }
                }
            });
            tokio::spawn(async move {
                while let Some((at, bytes)) = due.recv().await {
                    tokio::time::sleep_until(at.into()).await;
                    if to_server.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
            });
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
            });
        }
    });
    port
}

/// A gauge of `/metrics` (the admin's).
async fn gauge(host: &common::Host, name: &str) -> i64 {
    let text = host.page("/metrics").await;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(-1, |v| v as i64)
}

/// Each bot's state as replica `host`'s API shows it.
async fn states(host: &common::Host) -> BTreeMap<i64, String> {
    host.api("/api/bots").await["bots"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| Some((b["id"].as_i64()?, b["state"].as_str()?.to_owned())))
        .collect()
}

/// Bot `id`'s state in `states`, or "".
fn state_of(states: &BTreeMap<i64, String>, id: i64) -> &str {
    states.get(&id).map_or("", String::as_str)
}

/// DJ `dj` through replica 0's /connect, the consent page and /callback
/// (on replica 0, the public URL): the callback's status, and the bot's
/// id when it answered 303 to its page.
async fn consent(connect: String, dj: String) -> (String, u16, Option<i64>, String) {
    let (_, r) = common::consent_answer(&browser(), &connect, &dj).await;
    let status = r.status().as_u16();
    let id = (status == 303)
        .then(|| location(&r))
        .and_then(|to| to.strip_prefix("/bots/").and_then(|n| n.parse().ok()));
    // A failed consent's page says why in its first paragraph.
    let text = r.text().await.unwrap_or_default();
    let why = text
        .split("<p>")
        .nth(1)
        .and_then(|p| p.split("</p>").next())
        .unwrap_or(&text)
        .to_owned();
    (dj, status, id, why)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consents_through_one_replica_all_end_in_running_bots_shared_with_the_other() {
    let Some(pg) = testdb::PgCluster::start("consent-hold") else {
        return;
    };
    let mut setup = Setup::new("replicas-consent").await;
    let port0 = setup.port;
    let port1 = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        l.local_addr().expect("addr").port()
    };
    // Replica 0 reaches the service through a proxy that holds what it
    // sends for SERVICE_DELAY (the DJs' browsers reach the consent page
    // directly).
    let base = setup.emu.base_url();
    let service_port = base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the emulator's port");
    let far = slow_proxy(service_port, SERVICE_DELAY).await;
    let extra = format!(
        "database = \"{}\"\nmax_connections_per_client = 1024\n",
        pg.url
    );
    let text0 = setup.text_with(&extra).replace(
        &format!("base_url = \"{base}\""),
        &format!("base_url = \"http://127.0.0.1:{far}\""),
    );
    assert!(text0.contains(&format!("127.0.0.1:{far}")));
    // Replica 1: its own port, the service directly, the same public URL
    // (the consent's redirect lands on replica 0).
    let text1 = setup.text_with(&format!(
        "public_url = \"http://127.0.0.1:{port0}\"\n{extra}"
    ));
    let text1 = text1.replace(
        &format!("listen = \"127.0.0.1:{port0}\""),
        &format!("listen = \"127.0.0.1:{port1}\""),
    );
    assert!(text1.contains(&format!("127.0.0.1:{port1}")));
    setup.text = text0;
    let zero = setup.host(KEY).await;
    setup.text = text1;
    let one = setup.host(KEY).await;
    let one_url = format!("http://127.0.0.1:{port1}");
    let one = common::Host {
        url: one_url,
        stop: one.stop,
        task: one.task,
    };
    // Both live, each counting the other.
    common::until("two live replicas", Duration::from_secs(20), || async {
        gauge(&zero, "onair_host_replicas").await == 2
            && gauge(&one, "onair_host_replicas").await == 2
    })
    .await;
    assert!(zero.runs() && one.runs());

    // Every DJ through replica 0, one every EVERY, AT_ONCE at a time at most.
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(AT_ONCE));
    let mut consents = Vec::new();
    let mut pace = tokio::time::interval(EVERY);
    for k in 0..DJS {
        pace.tick().await;
        let gate = Arc::clone(&gate);
        let connect = zero.at("/connect");
        consents.push(tokio::spawn(async move {
            let _turn = gate.acquire_owned().await.expect("gate");
            consent(connect, format!("dj-hold-{k}")).await
        }));
    }
    let mut ids = BTreeSet::new();
    let mut failed = Vec::new();
    for c in consents {
        let (dj, status, id, text) = c.await.expect("a consent");
        match id {
            Some(id) => {
                ids.insert(id);
            }
            None => failed.push(format!("{dj}: {status} {text}")),
        }
    }
    let took = started.elapsed();
    assert!(
        failed.is_empty(),
        "{} of {DJS} consents failed (in {took:?}): {failed:#?}",
        failed.len()
    );
    assert_eq!(ids.len(), DJS, "one bot per DJ");

    // Every bot runs on one replica or the other (waiting for its DJ's
    // broadcast, or probing it: no bot stuck needing consent), and both
    // replicas run some.
    let running = |s: &str| matches!(s, "waiting" | "connecting" | "connected");
    let deadline = Instant::now() + Duration::from_secs(20);
    let last = loop {
        let last = (states(&zero).await, states(&one).await);
        let stuck: Vec<(i64, &str, &str)> = ids
            .iter()
            .map(|id| (*id, state_of(&last.0, *id), state_of(&last.1, *id)))
            .filter(|(_, a, b)| !running(a) && !running(b))
            .collect();
        let leases = (
            gauge(&zero, "onair_host_leases").await,
            gauge(&one, "onair_host_leases").await,
        );
        let shared = leases.0 + leases.1 == DJS as i64
            && leases.0 >= DJS as i64 / 3
            && leases.1 >= DJS as i64 / 3;
        if stuck.is_empty() && shared {
            eprintln!(
                "{DJS} consents through replica 0 in {took:?}; leases {leases:?} (replica 0, 1)"
            );
            break last;
        }
        assert!(
            Instant::now() < deadline,
            "not running or not shared in 20 s: leases {leases:?} (replica 0, 1), \
             not running (bot, on 0, on 1): {stuck:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let on_zero = ids
        .iter()
        .filter(|id| running(state_of(&last.0, **id)))
        .count();
    let on_one = ids
        .iter()
        .filter(|id| running(state_of(&last.1, **id)))
        .count();
    assert_eq!(on_zero + on_one, DJS, "each bot runs on one replica");
    assert!(on_zero > 0 && on_one > 0, "{on_zero} and {on_one}");
    let views = |m: &BTreeMap<i64, String>| {
        let mut n: BTreeMap<String, usize> = BTreeMap::new();
        for id in &ids {
            *n.entry(state_of(m, *id).to_owned()).or_default() += 1;
        }
        n
    };
    eprintln!(
        "views: replica 0 {:?}, replica 1 {:?}",
        views(&last.0),
        views(&last.1)
    );
    // Each replica shows the bots the other runs as running elsewhere, not
    // as needing consent (a DJ's page may come from either replica).
    for (id, (a, b)) in ids
        .iter()
        .map(|id| (id, (state_of(&last.0, *id), state_of(&last.1, *id))))
    {
        assert!(
            (running(a) && b == "elsewhere") || (a == "elsewhere" && running(b)),
            "bot {id}: {a} on replica 0, {b} on replica 1 ({:?} / {:?})",
            views(&last.0),
            views(&last.1)
        );
    }

    zero.stop().await;
    one.stop().await;
    setup.finish().await;
    drop(pg);
}
