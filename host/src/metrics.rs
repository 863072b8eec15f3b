//! Prometheus metrics at `/metrics` (prometheus-client): bots by state,
//! events by kind (a rate is events per second), refreshes, 429s by kind,
//! the delay from a frame's server timestamp to its handler, store
//! failures, the replica's leases, and the replies the bots' cores sent,
//! merged and dropped by kind. No label carries a token, a code or a person.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// A label of one word (`state`, `kind`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    /// The bot's state (`connected`, `waiting`, `stopped`, …).
    pub state: String,
}

/// A kind label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// The kind (`chat`, `quota_daily`, …).
    pub kind: String,
}

/// Every metric of the host.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Bots by state (set at each scrape).
    pub bots: Family<StateLabel, Gauge>,
    /// Stream events read, by kind.
    pub events: Family<KindLabel, Counter>,
    /// Token refreshes (new pairs after the first).
    pub refreshes: Counter,
    /// Code exchanges that brought a pair.
    pub authorizations: Counter,
    /// Consents that failed (the exchange refused, the service's error, a
    /// timeout): the DJ was told, no bot was left behind.
    pub consents_failed: Counter,
    /// 429 answers, by kind (`quota_per_second`, `quota_daily`, `chat_rate_limited`).
    pub throttled: Family<KindLabel, Counter>,
    /// Seconds from an event's server timestamp (its frame id) to its handler.
    pub event_delay: Histogram,
    /// Seconds from a refresh's answer (the new pair read) to the new pair
    /// committed in the store: the window in which a killed process loses
    /// the rotated pair.
    pub refresh_window: Histogram,
    /// Store writes that failed (each retried, then given up).
    pub store_errors: Counter,
    /// Event log lines dropped because the writer was far behind.
    pub log_dropped: Counter,
    /// Bots whose lease this replica holds.
    pub leases: Gauge,
    /// Live replicas, as this one last counted them.
    pub replicas: Gauge,
    /// Leases this replica took (free, expired or handed over).
    pub leases_taken: Counter,
    /// Leases this replica lost to another or gave up (cut from the store).
    pub leases_lost: Counter,
    /// Reply messages the service took, by reply kind (`welcome`,
    /// `welcome_back`, `thanks`, `milestone`, `command`).
    pub replies_sent: Family<KindLabel, Counter>,
    /// People named in those messages, by reply kind.
    pub replies_people: Family<KindLabel, Counter>,
    /// Replies that went out merged with others of their kind.
    pub replies_merged: Family<KindLabel, Counter>,
    /// Replies dropped (stale, the broadcast ended, refused, …), by kind.
    pub replies_dropped: Family<KindLabel, Counter>,
    /// Off-air probes sent: stream connects of bots waiting for their DJ's
    /// broadcast (answered 404, or finding the broadcast).
    pub probes: Counter,
    /// This replica's share of the app's probe budget (probes per second).
    pub probe_share: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// Seconds from a broadcast's start (`startedAt`) to its bot's stream
    /// open: how long finding a DJ on air took.
    pub detect: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("onair_host");
        let bots = Family::<StateLabel, Gauge>::default();
        let events = Family::<KindLabel, Counter>::default();
        let refreshes = Counter::default();
        let authorizations = Counter::default();
        let consents_failed = Counter::default();
        let throttled = Family::<KindLabel, Counter>::default();
        let refresh_window = Histogram::new([
            0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0,
        ]);
        registry.register(
            "refresh_window_seconds",
            "Seconds from a refresh's answer to the new pair committed in the store",
            refresh_window.clone(),
        );
        let event_delay = Histogram::new([
            0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
        ]);
        let store_errors = Counter::default();
        let log_dropped = Counter::default();
        let leases = Gauge::default();
        let replicas = Gauge::default();
        let leases_taken = Counter::default();
        let leases_lost = Counter::default();
        let replies_sent = Family::<KindLabel, Counter>::default();
        let replies_people = Family::<KindLabel, Counter>::default();
        let replies_merged = Family::<KindLabel, Counter>::default();
        let replies_dropped = Family::<KindLabel, Counter>::default();
        let probes = Counter::default();
        let probe_share = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        let detect = Histogram::new([
            1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
        ]);
        registry.register(
            "probes",
            "Off-air probes sent (stream connects of bots waiting for a broadcast)",
            probes.clone(),
        );
        registry.register(
            "probe_budget_share",
            "This replica's share of the app's off-air probe budget, probes per second",
            probe_share.clone(),
        );
        registry.register(
            "detect_seconds",
            "From a broadcast's start to its bot's stream open",
            detect.clone(),
        );
        registry.register(
            "replies_sent",
            "Reply messages sent, by reply kind",
            replies_sent.clone(),
        );
        registry.register(
            "replies_people",
            "People named in the reply messages sent, by reply kind",
            replies_people.clone(),
        );
        registry.register(
            "replies_merged",
            "Replies sent merged with others of their kind, by reply kind",
            replies_merged.clone(),
        );
        registry.register(
            "replies_dropped",
            "Replies dropped, never sent, by reply kind",
            replies_dropped.clone(),
        );
        registry.register(
            "leases",
            "Bots whose lease this replica holds",
            leases.clone(),
        );
        registry.register("replicas", "Live replicas", replicas.clone());
        registry.register("leases_taken", "Leases taken", leases_taken.clone());
        registry.register(
            "leases_lost",
            "Leases lost to another replica or given up",
            leases_lost.clone(),
        );
        registry.register("bots", "Bots by state", bots.clone());
        registry.register("events", "Stream events read, by kind", events.clone());
        registry.register("token_refreshes", "Token refreshes", refreshes.clone());
        registry.register(
            "authorizations",
            "Consent codes exchanged for a pair",
            authorizations.clone(),
        );
        registry.register(
            "consents_failed",
            "Consents whose code exchange failed",
            consents_failed.clone(),
        );
        registry.register(
            "throttled",
            "429 answers by kind (quota_per_second, quota_daily, chat_rate_limited)",
            throttled.clone(),
        );
        registry.register(
            "event_delay_seconds",
            "From an event's server timestamp to its handler",
            event_delay.clone(),
        );
        registry.register(
            "store_errors",
            "Store writes that failed",
            store_errors.clone(),
        );
        registry.register(
            "log_lines_dropped",
            "Event log lines dropped because the writer was far behind",
            log_dropped.clone(),
        );
        Metrics {
            registry,
            bots,
            events,
            refreshes,
            authorizations,
            consents_failed,
            throttled,
            event_delay,
            refresh_window,
            store_errors,
            log_dropped,
            leases,
            replicas,
            leases_taken,
            leases_lost,
            replies_sent,
            replies_people,
            replies_merged,
            replies_dropped,
            probes,
            probe_share,
            detect,
        }
    }
}

impl Metrics {
    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Adds what a bot's reply counters gained since `before` (its last
    /// reading; zero for a bot just started).
    pub fn replies(&self, before: &onair::bot::RepliesCounters, now: &onair::bot::RepliesCounters) {
        for kind in onair::kit::ReplyKind::ALL {
            let (b, n) = (before.of(kind), now.of(kind));
            let label = KindLabel {
                kind: kind.as_str().to_owned(),
            };
            for (family, gained) in [
                (&self.replies_sent, n.messages.saturating_sub(b.messages)),
                (&self.replies_people, n.people.saturating_sub(b.people)),
                (&self.replies_merged, n.merged.saturating_sub(b.merged)),
                (&self.replies_dropped, n.dropped.saturating_sub(b.dropped)),
            ] {
                if gained > 0 {
                    family.get_or_create(&label).inc_by(gained);
                }
            }
        }
    }

    /// Counts one event of `kind`.
    pub fn event(&self, kind: &str) {
        self.events
            .get_or_create(&KindLabel {
                kind: kind.to_owned(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_metric() {
        let m = Metrics::default();
        m.event("chat");
        m.refreshes.inc();
        m.bots
            .get_or_create(&StateLabel {
                state: "connected".into(),
            })
            .set(3);
        m.event_delay.observe(0.004);
        m.refresh_window.observe(0.0015);
        m.probes.inc_by(3);
        m.probe_share.set(66.5);
        m.detect.observe(12.0);
        let mut seen = onair::bot::RepliesCounters::default();
        seen.welcome.messages = 1;
        seen.welcome.people = 3;
        seen.welcome.merged = 3;
        m.replies(&Default::default(), &seen);
        let mut later = seen.clone();
        later.welcome.messages = 2;
        later.welcome.people = 4;
        later.thanks.dropped = 5;
        m.replies(&seen, &later);
        let text = m.encode();
        for needle in [
            "onair_host_replies_sent_total{kind=\"welcome\"} 2",
            "onair_host_replies_people_total{kind=\"welcome\"} 4",
            "onair_host_replies_merged_total{kind=\"welcome\"} 3",
            "onair_host_replies_dropped_total{kind=\"thanks\"} 5",
            "onair_host_events_total{kind=\"chat\"} 1",
            "onair_host_token_refreshes_total 1",
            "onair_host_bots{state=\"connected\"} 3",
            "onair_host_event_delay_seconds_bucket{le=\"0.005\"} 1",
            "onair_host_refresh_window_seconds_bucket{le=\"0.002\"} 1",
            "onair_host_refresh_window_seconds_bucket{le=\"0.001\"} 0",
            "onair_host_leases 0",
            "onair_host_leases_lost_total 0",
            "onair_host_probes_total 3",
            "onair_host_probe_budget_share 66.5",
            "onair_host_detect_seconds_bucket{le=\"10.0\"} 0",
            "onair_host_detect_seconds_bucket{le=\"15.0\"} 1",
            "# EOF",
        ] {
            assert!(text.contains(needle), "{needle} in\n{text}");
        }
    }

    /// Prometheus's naming conventions, on every metric registered: a
    /// counter's samples end in `_total`, a histogram is named by its unit
    /// (`_seconds`, `_bytes`), a gauge is not named as a counter, and no
    /// label names a bot, a DJ or a person (their ids are unbounded: they
    /// belong in traces and logs, not in series).
    #[test]
    fn every_metric_is_named_by_the_prometheus_conventions() {
        let m = Metrics::default();
        m.event("chat");
        m.bots
            .get_or_create(&StateLabel {
                state: "connected".into(),
            })
            .set(1);
        m.throttled
            .get_or_create(&KindLabel {
                kind: "quota_daily".into(),
            })
            .inc();
        m.log_dropped.inc();
        // A family is shown once it has a series.
        let mut replies = onair::bot::RepliesCounters::default();
        replies.welcome.messages = 1;
        replies.welcome.people = 1;
        replies.welcome.merged = 1;
        replies.thanks.dropped = 1;
        m.replies(&Default::default(), &replies);
        let text = m.encode();
        let mut kinds = std::collections::HashMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut words = rest.split(' ');
                if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                    kinds.insert(name.to_owned(), kind.to_owned());
                }
            }
        }
        assert!(kinds.len() >= 21, "{text}");
        for (name, kind) in &kinds {
            assert!(name.starts_with("onair_host_"), "{name}");
            match kind.as_str() {
                "counter" => assert!(!name.ends_with("_total"), "{name}: _total twice"),
                "histogram" => assert!(
                    name.ends_with("_seconds") || name.ends_with("_bytes"),
                    "{name}: a histogram is named by its unit"
                ),
                "gauge" => assert!(
                    !name.ends_with("_total"),
                    "{name}: a gauge named as a counter"
                ),
                other => panic!("{name}: {other}"),
            }
        }
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            let family = kinds
                .iter()
                .find(|(n, _)| name.starts_with(n.as_str()))
                .map(|(_, k)| k.as_str());
            if family == Some("counter") {
                assert!(name.ends_with("_total"), "{line}");
            }
            let labels = line
                .split_once('{')
                .and_then(|(_, rest)| rest.split_once('}'))
                .map(|(labels, _)| labels)
                .unwrap_or_default();
            for label in labels.split(',').filter(|l| !l.is_empty()) {
                let key = label.split('=').next().unwrap_or_default();
                let personal = key.ends_with("id")
                    || ["bot", "dj", "user", "nickname", "person", "listener"].contains(&key);
                assert!(!personal, "{line}: label {key}");
            }
        }
        assert!(
            text.contains("onair_host_log_lines_dropped_total 1"),
            "{text}"
        );
    }
}
