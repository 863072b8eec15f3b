//! The lease keeper: which bots this replica runs.
//!
//! Several `onair host` processes over one PostgreSQL database each run a
//! share of the bots. A bot runs where its **lease** is: a row's owner,
//! generation and expiry (database time), renewed every
//! [`TICK`] for [`LEASE_MS`]. Every [`TICK`] a replica
//!
//! 1. renews all its leases in one statement (what comes back is what it
//!    still holds: a bot whose lease is gone stops here at once);
//! 2. beats its row in `replicas` and counts the live ones (beat within
//!    [`ALIVE_MS`]) and the bots to run;
//! 3. balances: its share is `n / live` (the first `n % live` replicas by
//!    id one more); below it, it takes free or expired leases (`FOR UPDATE
//!    SKIP LOCKED`), above it, it closes the surplus bots (saved) and
//!    releases their leases for the others. Leases are taken in batches:
//!    each taken bot's first connect gets a slot of a
//!    [`Pacer`](crate::probe::Pacer) at the probe budget's pace
//!    ([`takeover_pace`](crate::probe::takeover_pace)), and a look takes only the
//!    leases whose slots come before the next look.
//!
//! Beside it, [`keep_quota`] syncs the app's daily quota with the store
//! twice a second.
//!
//! A replica that cannot renew for [`GIVE_UP_MS`] stops all its bots
//! without a word to the store, [`LEASE_MS`] − [`GIVE_UP_MS`] before its
//! leases can be taken; every write a bot makes is fenced by its lease
//! generation besides. SQLite is the one-replica case of the same code.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::bots::Hub;
use crate::lease::{ALIVE_MS, GIVE_UP_MS, LEASE_MS, TICK};

/// One store call of the keeper, at most.
const CALL: Duration = Duration::from_secs(3);

/// A look takes the leases whose first connects fit in the pacer's slots
/// until the next look (ms, a [`TICK`]): the others stay free for the
/// other replicas meanwhile, and a replica's pace follows the live count
/// from one look to the next.
pub const TAKE_AHEAD_MS: u64 = 2_000;

/// How many bots replica number `rank` (of `live`, by id) runs of `bots`.
pub fn share(bots: i64, live: i64, rank: i64) -> i64 {
    let live = live.max(1);
    bots / live + i64::from(rank < bots % live)
}

/// Runs the keeper until `stopping` turns true.
pub async fn keep(hub: Arc<Hub>, mut stopping: watch::Receiver<bool>) {
    let store = hub.store.clone();
    let me = store.replica().to_owned();
    // Bots running here, by id: their lease generation.
    let mut owned: HashMap<i64, i64> = HashMap::new();
    // Bots being handed over (closing): not restarted by a renewal.
    let releasing: Arc<std::sync::Mutex<HashSet<i64>>> = Arc::default();
    let mut renewed_at = Instant::now();
    let mut first = true;
    // First connects of the bots taken here: paced by the probe budget.
    let budget = f64::from(hub.config.probe_budget_per_s);
    let epoch = Instant::now();
    let mut pacer = crate::probe::Pacer::default();
    let mut starting: Option<u64> = None;
    let mut counted = store.dialect() == crate::store::Dialect::Sqlite;
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopping.changed() => return,
        }
        // 1. Renew: a renewal that could end past the give-up time is cut
        // short, so the bots stop here on time (not a slow answer later).
        let left = Duration::from_millis(GIVE_UP_MS.unsigned_abs())
            .saturating_sub(renewed_at.elapsed())
            .max(Duration::from_millis(100));
        // The new expiry counts from when the statement ran, after `sent`:
        // counting from `sent` errs on the early side.
        // Leases this replica's bots took themselves before this renewal
        // (a steal is saved before it is noted): watched like the others.
        owned.extend(hub.taken_here());
        let sent = Instant::now();
        match tokio::time::timeout(CALL.min(left), store.renew_leases(LEASE_MS)).await {
            Ok(Ok(held)) => {
                renewed_at = sent;
                hub.note_leases_renewed(true);
                let held_ids: HashMap<i64, _> = held.iter().map(|l| (l.id, *l)).collect();
                // Lost: no longer this replica's. A lease still held here
                // under a newer generation was taken again by this
                // replica's own bot (a consent or a revoke through this
                // replica after another had taken it): the bot runs on.
                let lost: Vec<i64> = owned
                    .keys()
                    .filter(|id| !held_ids.contains_key(id))
                    .copied()
                    .collect();
                for id in lost {
                    owned.remove(&id);
                    hub.metrics.leases_lost.inc();
                    tracing::warn!(
                        bot = id,
                        "lease lost to another replica: the bot stops here"
                    );
                    hub.abandon(id);
                }
                let closing = releasing.lock().map(|r| r.clone()).unwrap_or_default();
                for lease in held {
                    if closing.contains(&lease.id) {
                        continue;
                    }
                    if !lease.enabled {
                        // Disabled through another replica.
                        owned.remove(&lease.id);
                        hand_over(&hub, &releasing, lease.id);
                        continue;
                    }
                    if owned.insert(lease.id, lease.generation) != Some(lease.generation) {
                        // Taken through this replica's web side (a new DJ,
                        // a re-connect, a revoke), or held from before a cut.
                        hub.take(lease.id, lease.generation, None).await;
                    }
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "leases not renewed"),
            Err(_) => tracing::warn!("leases not renewed: the store did not answer in 3 s"),
        }
        let silent = i64::try_from(renewed_at.elapsed().as_millis()).unwrap_or(i64::MAX);
        if silent >= GIVE_UP_MS {
            if !owned.is_empty() {
                tracing::error!(
                    bots = owned.len(),
                    silent_ms = silent,
                    "cut from the store: every bot stops here before its lease can expire"
                );
                for id in owned.keys() {
                    hub.abandon(*id);
                    hub.metrics.leases_lost.inc();
                }
                owned.clear();
                hub.metrics.leases.set(0);
                hub.note_leases_renewed(false);
            }
            continue;
        }
        // 2. Beat, count.
        let (live, bots) = match tokio::time::timeout(CALL, store.heartbeat(ALIVE_MS)).await {
            Ok(Ok(counts)) => counts,
            _ => continue,
        };
        // Bots connected through another replica get a task here too (the
        // dashboard, commands).
        if let Ok(Ok(max)) = tokio::time::timeout(CALL, store.max_integration_id()).await {
            if max > hub.max_bot_id() {
                if let Err(e) = hub.restore().await {
                    tracing::warn!(error = %e, "new bots not read");
                }
            }
        }
        let rank =
            i64::try_from(live.iter().position(|r| *r == me).unwrap_or(live.len())).unwrap_or(0);
        let live_n = i64::try_from(live.len()).unwrap_or(1).max(1);
        hub.metrics.replicas.set(live_n);
        let target = share(bots, live_n, rank);
        let mine = i64::try_from(owned.len()).unwrap_or(0);
        // 3. Balance: leases are taken in batches, each bot's first
        // connect in a slot of the pacer (see `crate::probe::takeover_pace`).
        let now_ms = u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        hub.probes
            .set_taking(counted && (mine < target || pacer.busy(now_ms)));
        if !counted {
            // On PostgreSQL the first look only beats and counts: replicas
            // starting together each count the others before taking.
        } else if mine < target {
            let share_per_s = crate::probe::share(budget, live_n);
            let pace =
                crate::probe::takeover_pace(share_per_s, hub.probes.summary().plan.planned_per_s);
            let mut spacing = crate::probe::spacing_ms(pace);
            if first {
                // The replica's start: over `start_spread_ms` at least.
                let bots = u64::try_from(target - mine).unwrap_or(1);
                starting = Some(crate::probe::start_spacing_ms(
                    spacing,
                    hub.config.start_spread_ms,
                    bots,
                ));
            }
            if let Some(start) = starting {
                spacing = spacing.max(start);
            }
            let room = pacer.room(now_ms, spacing, TAKE_AHEAD_MS);
            let batch = i64::try_from(room).unwrap_or(i64::MAX).min(target - mine);
            if batch > 0 {
                match tokio::time::timeout(CALL, store.take_leases(batch, LEASE_MS)).await {
                    Ok(Ok(taken)) => {
                        if !taken.is_empty() {
                            tracing::info!(
                                taken = taken.len(),
                                wanted = target - mine,
                                spacing_ms = spacing,
                                "leases taken"
                            );
                        }
                        for lease in taken {
                            owned.insert(lease.id, lease.generation);
                            hub.metrics.leases_taken.inc();
                            let delay = Duration::from_millis(pacer.book(now_ms, spacing));
                            hub.take(lease.id, lease.generation, Some(delay)).await;
                        }
                    }
                    Ok(Err(e)) => tracing::warn!(error = %e, "leases not taken"),
                    Err(_) => tracing::warn!("leases not taken: the store did not answer in 3 s"),
                }
            }
        } else if mine > target {
            let excess = usize::try_from(mine - target).unwrap_or(0);
            for id in to_hand_over(owned.keys().copied(), excess, |id| hub.consenting(id)) {
                owned.remove(&id);
                hand_over(&hub, &releasing, id);
            }
        }
        // The start's spread holds until the replica has its share once.
        first = first && !counted;
        counted = true;
        if i64::try_from(owned.len()).unwrap_or(0) >= target {
            starting = None;
        }
        hub.metrics
            .leases
            .set(i64::try_from(owned.len()).unwrap_or(i64::MAX));
    }
}

/// Which of this replica's bots to hand over when it holds `excess` more
/// than its share: the newest first, never one whose consent runs here
/// (its new pair is not stored yet: the next replica would find none and
/// wait for a consent that already happened); those wait for a later look.
fn to_hand_over(
    owned: impl Iterator<Item = i64>,
    excess: usize,
    consenting: impl Fn(i64) -> bool,
) -> Vec<i64> {
    let mut ids: Vec<i64> = owned.filter(|id| !consenting(*id)).collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    ids.truncate(excess);
    ids
}

/// Closes bot `id` here and releases its lease, in the background.
fn hand_over(hub: &Arc<Hub>, releasing: &Arc<std::sync::Mutex<HashSet<i64>>>, id: i64) {
    if let Ok(mut r) = releasing.lock() {
        if !r.insert(id) {
            return;
        }
    }
    let hub = Arc::clone(hub);
    let releasing = Arc::clone(releasing);
    tokio::spawn(async move {
        hub.release(id).await;
        if let Ok(mut r) = releasing.lock() {
            r.remove(&id);
        }
    });
}

/// What this replica's bots learned goes to the app's row; what the others
/// learned comes back (every bot here gets it at once).
pub async fn sync_quota(hub: &Hub) {
    let client_id = hub.config.client_id.clone();
    let now = hub.now_ms();
    let app = match hub.quota_to_store() {
        Some(learned) => {
            match tokio::time::timeout(CALL, hub.store.merge_app_quota(&client_id, &learned, now))
                .await
            {
                Ok(Ok(app)) => app,
                _ => {
                    hub.quota_unsaved();
                    return;
                }
            }
        }
        None => match tokio::time::timeout(CALL, hub.store.app_quota(&client_id)).await {
            Ok(Ok(app)) => app,
            _ => return,
        },
    };
    hub.quota_from_store(&app);
}

/// How often the probe keeper plans the off-air probes when nothing
/// changed (a bot going on or off air plans within a second).
pub const PROBE_PLAN_EVERY: Duration = Duration::from_secs(5);

/// How often the probe keeper reads every bot's history from the store.
pub const PROBE_HISTORY_EVERY: Duration = Duration::from_secs(60);

/// Plans the off-air probes of this replica's bots ([`crate::probe`]):
/// its share of `[host] probe_budget_per_s` is the budget divided by the
/// live replicas the lease keeper last counted (one until it has; SQLite is
/// one), replanned every [`PROBE_PLAN_EVERY`] and within a second of a bot
/// going on or off air. Reads every bot's history from the store every
/// [`PROBE_HISTORY_EVERY`] (the other replicas write theirs). Measures the
/// probes sent (over 10 s) for the dashboard.
pub async fn keep_probes(hub: Arc<Hub>, mut stopping: watch::Receiver<bool>) {
    let budget = f64::from(hub.config.probe_budget_per_s);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut planned_at: Option<Instant> = None;
    let mut read_at = Instant::now();
    let (mut counted, mut counted_at) = (hub.metrics.probes.get(), Instant::now());
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopping.changed() => return,
        }
        if read_at.elapsed() >= PROBE_HISTORY_EVERY {
            // What the other replicas' bots saw (a bot moved here since
            // brings its history).
            read_at = Instant::now();
            read_probe_histories(&hub).await;
        }
        let share = crate::probe::share(budget, hub.metrics.replicas.get());
        // Half of it while the lease keeper takes bots over (their first
        // connects spend the rest).
        let planned = hub.probes.planned_share(share);
        let due = planned_at.is_none_or(|at| at.elapsed() >= PROBE_PLAN_EVERY);
        if due || hub.probes.changed() || planned != hub.probes.summary().plan.share_per_s {
            let plan = hub.probes.replan(hub.now_ms(), planned);
            hub.metrics.probe_share.set(share);
            planned_at = Some(Instant::now());
            tracing::debug!(
                off_air = plan.off_air,
                share_per_s = plan.share_per_s,
                planned_per_s = plan.planned_per_s,
                "off-air probes planned"
            );
        }
        let elapsed = counted_at.elapsed();
        if elapsed >= Duration::from_secs(10) {
            let now = hub.metrics.probes.get();
            hub.probes
                .note_spent(now.saturating_sub(counted) as f64 / elapsed.as_secs_f64());
            (counted, counted_at) = (now, Instant::now());
        }
    }
}

/// Reads every bot's broadcast history from the store into the probe
/// planner (within the store call's 3 s limit; a failure is logged, the plan goes on with
/// what it knows).
pub async fn read_probe_histories(hub: &Hub) {
    match tokio::time::timeout(CALL, hub.store.probe_histories()).await {
        Ok(Ok(histories)) => {
            for (id, history) in histories {
                hub.probes.load(id, history);
            }
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "probe histories not read"),
        Err(_) => tracing::warn!("probe histories not read: the store did not answer in 3 s"),
    }
}

/// Syncs the quota every second (faster than the keeper's tick: a daily
/// block reaches the other replicas' bots within about a second).
pub async fn keep_quota(hub: Arc<Hub>, mut stopping: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => sync_quota(&hub).await,
            _ = stopping.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The newest bots are handed over first, never one whose consent
    /// runs here (it would reach the other replica without its pair).
    #[test]
    fn a_bot_whose_consent_runs_here_is_never_handed_over() {
        let consenting = [7, 9];
        let held = |id: i64| consenting.contains(&id);
        assert_eq!(
            to_hand_over([1, 5, 7, 9, 3].into_iter(), 2, held),
            vec![5, 3]
        );
        assert_eq!(to_hand_over([7, 9].into_iter(), 2, held), Vec::<i64>::new());
        assert_eq!(
            to_hand_over([1, 2, 3].into_iter(), 5, |_| false),
            vec![3, 2, 1]
        );
        assert_eq!(
            to_hand_over([1, 2, 3].into_iter(), 0, |_| false),
            Vec::<i64>::new()
        );
    }

    /// A hub (a replica of its own) over `url`, its probe budget `budget`.
    async fn hub(url: &str, budget: u32) -> Arc<Hub> {
        let app = (
            "http://127.0.0.1:9",
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "secret",
        );
        crate::testdb::hub_of(url, budget, app).await
    }

    /// Runs the lease keeper and the probe keeper of `hub` until the
    /// sender is dropped or says stop.
    fn keepers(hub: &Arc<Hub>) -> watch::Sender<bool> {
        let (stop, stopping) = watch::channel(false);
        tokio::spawn(keep(Arc::clone(hub), stopping.clone()));
        tokio::spawn(keep_probes(Arc::clone(hub), stopping));
        stop
    }

    async fn until_shares(what: &str, hubs: &[&Arc<Hub>], share: f64) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while hubs.iter().any(|h| {
            h.metrics.probe_share.get() != share || h.probes.summary().plan.share_per_s != share
        }) {
            assert!(
                Instant::now() < deadline,
                "{what}: not {share}/s within 20 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_probe_share_halves_when_a_second_replica_joins_and_comes_back_when_it_leaves() {
        let Some(pg) = crate::testdb::PgCluster::start("probe_share") else {
            return;
        };
        let a = hub(&pg.url, 200).await;
        let _stop_a = keepers(&a);
        until_shares("one replica", &[&a], 200.0).await;
        let b = hub(&pg.url, 200).await;
        let stop_b = keepers(&b);
        until_shares("a second replica joined", &[&a, &b], 100.0).await;
        // What one replica's bot saw reaches the other's planner.
        let id = b.store.create_integration(1).await.expect("a bot");
        let mut seen = crate::probe::History::default();
        seen.started(1_000);
        seen.ended(2_000);
        b.store.save_probe_history(id, &seen).await.expect("saved");
        assert_eq!(a.probes.history(id), None);
        read_probe_histories(&a).await;
        assert_eq!(a.probes.history(id), Some(seen));
        // The second leaves (as at SIGTERM): the first spends it all again.
        let _ = stop_b.send(true);
        b.store.leave().await.expect("leave");
        until_shares("the second left", &[&a], 200.0).await;
    }

    /// A control call of the emulator (a POST of `body`, or a GET).
    async fn control(
        emu: &onair_emulator::Running,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> serde_json::Value {
        let http = reqwest::Client::new();
        let url = format!("{}{path}", emu.control_url());
        let request = match body {
            Some(b) => http.post(url).body(b.to_string()),
            None => http.get(url),
        };
        let answer = request.send().await.expect("control call");
        assert!(answer.status().is_success(), "{path}: {}", answer.status());
        answer.json().await.expect("control JSON")
    }

    /// The most of `at` (ms) within any 1 000 ms.
    fn busiest_second(at: &[i64]) -> usize {
        let mut all = at.to_vec();
        all.sort_unstable();
        (0..all.len())
            .map(|i| all[i..].iter().take_while(|t| **t < all[i] + 1000).count())
            .max()
            .unwrap_or(0)
    }

    /// Forty bots of a dead replica (their leases expired), two survivors
    /// and an app budget of 10 probes a second: the survivors take them in
    /// batches, each part of them, and the service's request log shows
    /// every bot connecting again, never more than 10 first connects in a
    /// second, and no per-second 429.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_replicas_bots_are_taken_in_batches_within_the_budget_by_both_survivors() {
        const BOTS: usize = 40;
        const BUDGET: u32 = 10;
        let Some(pg) = crate::testdb::PgCluster::start("takeover") else {
            return;
        };
        let emu = onair_emulator::Emulator::builder()
            .start()
            .await
            .expect("emulator");
        // The hubs' redirect URI: the default public URL's /callback.
        let redirect = "http://127.0.0.1:8088/callback";
        let app = control(
            &emu,
            "/apps",
            Some(serde_json::json!({"redirectUri": redirect})),
        )
        .await;
        let client_id = app["clientId"].as_str().expect("id").to_owned();
        let secret = app["clientSecret"].as_str().expect("secret").to_owned();
        let base = emu.base_url();
        let app = (base.as_str(), client_id.as_str(), secret.as_str());
        // The replica about to die: its bots consent and run there.
        let dead = crate::testdb::hub_of(&pg.url, BUDGET, app).await;
        let mut ids = Vec::new();
        for k in 0..BOTS {
            let consent = serde_json::json!({"dj": format!("dj-off-{k}"), "clientId": client_id,
                "redirectUri": redirect});
            let code = control(&emu, "/consent", Some(consent)).await["code"]
                .as_str()
                .expect("code")
                .to_owned();
            let (id, answer, _held) = dead.connect_new(code).await.expect("a bot");
            assert_eq!(answer.await.ok(), Some(Ok(())), "bot {id} paired");
            ids.push(id);
        }
        // It dies: its bots stop without a word, its leases expire.
        for id in &ids {
            dead.abandon(*id);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let pool = sqlx::postgres::PgPool::connect(&pg.url)
            .await
            .expect("pool");
        sqlx::query("UPDATE integrations SET lease_expires_ms = 0")
            .execute(&pool)
            .await
            .expect("expired");
        let cut = control(&emu, "/requests", None).await["total"]
            .as_u64()
            .expect("total");
        // Two survivors.
        let a = crate::testdb::hub_of(&pg.url, BUDGET, app).await;
        let b = crate::testdb::hub_of(&pg.url, BUDGET, app).await;
        let _stop_a = keepers(&a);
        let _stop_b = keepers(&b);
        let deadline = Instant::now() + Duration::from_secs(40);
        let path = format!("/requests?since={cut}&clientId={client_id}");
        let (firsts, log) = loop {
            let log = control(&emu, &path, None).await;
            let mut firsts: HashMap<String, i64> = HashMap::new();
            for r in log["requests"].as_array().into_iter().flatten() {
                if r["path"] == "/v1/live/events" {
                    if let (Some(who), Some(at)) = (r["integration"].as_str(), r["atMs"].as_i64()) {
                        firsts.entry(who.to_owned()).or_insert(at);
                    }
                }
            }
            if firsts.len() == BOTS {
                break (firsts, log);
            }
            assert!(
                Instant::now() < deadline,
                "{} of {BOTS} bots connected again within 40 s",
                firsts.len()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let at: Vec<i64> = firsts.values().copied().collect();
        let busiest = busiest_second(&at);
        assert!(
            busiest <= BUDGET as usize,
            "{busiest} first connects in one second"
        );
        let spread = at.iter().max().unwrap_or(&0) - at.iter().min().unwrap_or(&0);
        // 40 bots at 10 a second at most: 3.5 s at least.
        assert!(spread >= 3_500, "first connects over {spread} ms");
        let quota = log["requests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["quota"] == "perSecond")
            .count();
        assert_eq!(quota, 0, "per-second 429s");
        // Both survivors took part of them.
        let owners = a.store.lease_owners().await.expect("owners");
        let held = |hub: &Arc<Hub>| {
            owners
                .iter()
                .filter(|(_, o)| *o == hub.store.replica())
                .count()
        };
        assert_eq!(held(&a) + held(&b), BOTS, "{owners:?}");
        assert!(
            held(&a) >= BOTS / 4 && held(&b) >= BOTS / 4,
            "{} and {}",
            held(&a),
            held(&b)
        );
        pool.close().await;
    }

    #[test]
    fn shares_add_up_and_differ_by_one_at_most() {
        for bots in 0..130 {
            for live in 1..7 {
                let shares: Vec<i64> = (0..live).map(|r| share(bots, live, r)).collect();
                assert_eq!(shares.iter().sum::<i64>(), bots);
                let (lo, hi) = (shares.iter().min(), shares.iter().max());
                assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1), "{shares:?}");
            }
        }
        assert_eq!(share(60, 3, 0), 20);
        assert_eq!(share(58, 3, 2), 19);
    }
}
