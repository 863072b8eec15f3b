use super::*;
use crate::proto::problem::classify;

const NOW: u64 = 1_700_000_000_000; // Tue, 14 Nov 2023 22:13:20 GMT

fn problem(endpoint: Endpoint, status: u16, headers: &[(&str, &str)], body: &str) -> Problem {
    classify(endpoint, status, headers, body.as_bytes())
}

#[test]
fn paces_when_remaining_hits_zero() {
    let mut t = QuotaTracker::new(1);
    let ok = problem(
        Endpoint::Live,
        200,
        &[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-replenish-rate", "4"),
        ],
        "{}",
    );
    t.on_response(Endpoint::Live, &ok, NOW);
    assert_eq!(t.next_call_at(&Permission::FansRead, NOW), NOW + 250);
    assert_eq!(t.snapshot().replenish_rate, Some(4));
    let unknown_rate = problem(Endpoint::Live, 200, &[("x-ratelimit-remaining", "0")], "{}");
    t.on_response(Endpoint::Live, &unknown_rate, NOW + 1_000);
    assert_eq!(
        t.next_call_at(&Permission::LiveRead, NOW + 1_000),
        NOW + 2_000
    );
    let plenty = problem(Endpoint::Live, 200, &[("x-ratelimit-remaining", "9")], "{}");
    t.on_response(Endpoint::Live, &plenty, NOW + 2_000);
    assert_eq!(
        t.next_call_at(&Permission::LiveRead, NOW + 2_000),
        NOW + 2_000
    );
}

#[test]
fn per_second_429_backs_off_and_resets() {
    let mut t = QuotaTracker::new(9);
    let limited = problem(Endpoint::Listeners, 429, &[], "");
    let mut now = NOW;
    let mut waits = Vec::new();
    for attempt in 0..6u32 {
        t.on_response(Endpoint::Listeners, &limited, now);
        let at = t.next_call_at(&Permission::ListenersRead, now);
        let wait = at - now;
        assert!(
            wait <= Backoff::new(0).ceiling_ms(attempt),
            "attempt {attempt}: {wait}"
        );
        waits.push(wait);
        now = at + 1;
    }
    insta::assert_json_snapshot!("per_second_429_waits_seed_9", waits);
    t.on_response(
        Endpoint::Listeners,
        &problem(Endpoint::Listeners, 200, &[], "{}"),
        now,
    );
    t.on_response(Endpoint::Listeners, &limited, now);
    assert!(
        t.next_call_at(&Permission::ListenersRead, now) - now <= 1_000,
        "reset to 1 s"
    );
}

#[test]
fn daily_429_blocks_one_permission_or_the_app() {
    let mut t = QuotaTracker::new(2);
    let scoped = problem(
        Endpoint::Fans,
        429,
        &[
            ("Retry-After", "600"),
            ("x-ratelimit-daily-scope", "fans.read"),
        ],
        "",
    );
    t.on_response(Endpoint::Fans, &scoped, NOW);
    assert_eq!(t.next_call_at(&Permission::FansRead, NOW), NOW + 600_000);
    assert_eq!(t.next_call_at(&Permission::LiveRead, NOW), NOW);
    assert_eq!(
        t.blocks(NOW),
        [Block {
            scope: Some(Permission::FansRead),
            until_ms: NOW + 600_000
        }]
    );

    let app = problem(
        Endpoint::Live,
        429,
        &[("Retry-After", "Tue, 14 Nov 2023 23:13:20 GMT")],
        "",
    );
    t.on_response(Endpoint::Live, &app, NOW);
    assert_eq!(t.next_call_at(&Permission::ChatSend, NOW), NOW + 3_600_000);
    assert_eq!(t.blocks(NOW).len(), 2);
    assert!(t.blocks(NOW + 3_600_000).is_empty());

    // The stream and the token endpoints are never paced.
    assert_eq!(t.next_call_at_endpoint(Endpoint::Events, NOW), NOW);
    assert_eq!(t.next_call_at_endpoint(Endpoint::Token, NOW), NOW);
    assert_eq!(
        t.next_call_at_endpoint(Endpoint::Chat, NOW),
        NOW + 3_600_000
    );
}

#[test]
fn daily_429_without_usable_retry_after() {
    let mut t = QuotaTracker::new(2);
    let with_reset = problem(
        Endpoint::Live,
        429,
        &[
            ("retry-after", "whenever"),
            ("x-ratelimit-daily-reset", "1700006400"),
        ],
        "",
    );
    t.on_response(Endpoint::Live, &with_reset, NOW);
    assert_eq!(
        t.next_call_at(&Permission::LiveRead, NOW),
        1_700_006_400_000
    );
    let mut t = QuotaTracker::new(2);
    let bare = problem(
        Endpoint::Live,
        429,
        &[("x-ratelimit-daily-scope", "live.read")],
        "",
    );
    t.on_response(Endpoint::Live, &bare, NOW);
    assert_eq!(
        t.next_call_at(&Permission::LiveRead, NOW),
        NOW + QuotaTracker::DAILY_UNKNOWN_MS
    );
}

#[test]
fn chat_limit_is_its_own_short_wait() {
    let mut t = QuotaTracker::new(5);
    let body = r#"{"status":429,"detailCode":"OAPI_MNGR_0302"}"#;
    t.on_response(
        Endpoint::Chat,
        &problem(Endpoint::Chat, 429, &[], body),
        NOW,
    );
    let at = t.next_call_at_endpoint(Endpoint::Chat, NOW);
    assert!((NOW + 1_000..=NOW + 2_000).contains(&at), "{}", at - NOW);
    assert_eq!(
        t.next_call_at(&Permission::ChatSend, NOW),
        NOW,
        "not a quota block"
    );
    assert_eq!(t.next_call_at_endpoint(Endpoint::Live, NOW), NOW);
}

#[test]
fn stream_responses_are_ignored_and_blocks_stay_bounded() {
    let mut t = QuotaTracker::new(0);
    let odd = problem(Endpoint::Events, 429, &[("retry-after", "60")], "");
    t.on_response(Endpoint::Events, &odd, NOW);
    assert!(t.blocks(NOW).is_empty());
    for i in 0..100 {
        let scope = format!("junk.{i}");
        let p = problem(
            Endpoint::Live,
            429,
            &[
                ("retry-after", "60"),
                ("x-ratelimit-daily-scope", scope.as_str()),
            ],
            "",
        );
        t.on_response(Endpoint::Live, &p, NOW);
    }
    assert_eq!(t.blocks(NOW).len(), QuotaTracker::MAX_BLOCKS);
}

#[test]
fn the_days_calls_used_up_hold_every_call_until_the_reset() {
    let mut t = QuotaTracker::new(1);
    let reset_s = (NOW + 3_600_000) / 1000;
    let last = problem(
        Endpoint::Listeners,
        200,
        &[
            ("x-ratelimit-daily-remaining", "0"),
            ("x-ratelimit-daily-reset", &reset_s.to_string()),
        ],
        "{}",
    );
    t.on_response(Endpoint::Listeners, &last, NOW);
    assert_eq!(t.next_call_at(&Permission::ChatSend, NOW), NOW + 3_600_000);
    assert_eq!(
        t.next_call_at_endpoint(Endpoint::Events, NOW),
        NOW,
        "never the stream"
    );
    let daily = t.daily(NOW);
    assert_eq!(
        (daily.remaining, daily.reset_ms),
        (Some(0), Some(NOW + 3_600_000))
    );
    assert_eq!(
        daily.blocks,
        [Block {
            scope: None,
            until_ms: NOW + 3_600_000
        }]
    );
    // Past the reset, nothing is left of it.
    assert_eq!(t.daily(NOW + 3_600_000), DailyQuota::default());
}

#[test]
fn what_another_bot_learned_blocks_alike_and_junk_cannot_hold_forever() {
    let mut learner = QuotaTracker::new(1);
    let daily_429 = problem(
        Endpoint::Listeners,
        429,
        &[
            ("Retry-After", "600"),
            ("x-ratelimit-daily-scope", "listeners.read"),
        ],
        "",
    );
    learner.on_response(Endpoint::Listeners, &daily_429, NOW);
    let learned = learner.daily(NOW);
    // Through a store, as JSON.
    let stored = serde_json::to_string(&learned).unwrap();
    let mut other = QuotaTracker::new(2);
    other.share(&serde_json::from_str(&stored).unwrap(), NOW + 1);
    assert_eq!(
        other.next_call_at(&Permission::ListenersRead, NOW + 1),
        NOW + 600_000
    );
    assert_eq!(other.next_call_at(&Permission::ChatSend, NOW + 1), NOW + 1);
    // Ended blocks change nothing; a block years away ends within a day.
    let junk = DailyQuota {
        remaining: Some(0),
        reset_ms: None,
        blocks: vec![
            Block {
                scope: Some(Permission::FansRead),
                until_ms: NOW - 1,
            },
            Block {
                scope: None,
                until_ms: u64::MAX,
            },
        ],
    };
    let mut third = QuotaTracker::new(3);
    third.share(&junk, NOW);
    assert_eq!(
        third.next_call_at(&Permission::LiveRead, NOW),
        NOW + MAX_RETRY_AFTER_MS
    );
    assert_eq!(third.blocks(NOW).len(), 1, "{:?}", third.blocks(NOW));
}

#[test]
fn merging_two_bots_views_of_the_daily_quota_keeps_the_app_s_truth() {
    let day = |remaining, reset| DailyQuota {
        remaining: Some(remaining),
        reset_ms: Some(reset),
        blocks: vec![],
    };
    let block = |scope: Option<Permission>, until_ms| Block { scope, until_ms };
    // A later reset wins with its count, even a higher one (a new day).
    let mut app = day(3, NOW + 1_000);
    assert!(app.merge(&day(90, NOW + 86_400_000), NOW));
    assert_eq!(app, day(90, NOW + 86_400_000));
    // An earlier reset (an old answer) changes nothing.
    assert!(!app.merge(&day(1, NOW + 1_000), NOW));
    // The same reset: the lower count.
    assert!(app.merge(&day(40, NOW + 86_400_000), NOW));
    assert_eq!(app.remaining, Some(40));
    assert!(!app.merge(&day(60, NOW + 86_400_000), NOW));
    // Blocks by scope, the later end wins; an ended one is dropped.
    let blocks = DailyQuota {
        blocks: vec![
            block(Some(Permission::ChatSend), NOW + 5_000),
            block(None, NOW + 10),
        ],
        ..DailyQuota::default()
    };
    assert!(app.merge(&blocks, NOW));
    let later = DailyQuota {
        blocks: vec![block(Some(Permission::ChatSend), NOW + 9_000)],
        ..DailyQuota::default()
    };
    assert!(app.merge(&later, NOW + 20));
    assert_eq!(
        app.blocks,
        vec![block(Some(Permission::ChatSend), NOW + 9_000)]
    );
    // Past the reset and the blocks: nothing is known.
    assert!(app.merge(&DailyQuota::default(), NOW + 86_400_000));
    assert_eq!(app, DailyQuota::default());
}
