//! The kit's rules, one test each, and properties over any order of joins,
//! chats and rejoins, with and without a restart.

use super::*;
use crate::event::{Like, LikeType, Presence};
use crate::kit::config::{CommandConfig, GreetingsConfig, MilestonesConfig};
use crate::proto::time::Timestamp;
use proptest::prelude::*;

const MIN: u64 = 60_000;

fn user(id: &str) -> User {
    User {
        id: id.into(),
        nickname: Some(format!("N{id}")),
    }
}

fn join(id: &str, is_manager: bool) -> Event {
    Event::Presence(Presence {
        user: user(id),
        kind: PresenceType::Join,
        fan_rank: None,
        is_manager,
        favorite_temperature: None,
        time: Timestamp::new("t"),
    })
}

fn chat(id: &str, message: &str) -> Event {
    Event::Chat(Chat {
        user: user(id),
        is_dj: false,
        message: message.into(),
        sent_time: Timestamp::new("t"),
    })
}

fn dj_chat(message: &str) -> Event {
    Event::Chat(Chat {
        user: user("dj"),
        is_dj: true,
        message: message.into(),
        sent_time: Timestamp::new("t"),
    })
}

fn like(id: &str, hearts: u64) -> Event {
    Event::Like(Like {
        user: user(id),
        kind: LikeType::Paid,
        total_amount: hearts,
        amount: hearts,
        extra_amount: 0,
        combo: Some(1),
        time: Timestamp::new("t"),
    })
}

fn donation(id: &str, amount: u64) -> Event {
    Event::Donation(Donation {
        user: user(id),
        amount,
        message: None,
        time: Timestamp::new("t"),
    })
}

fn live_ended() -> Event {
    Event::End(End {
        reason: EndReason::LiveEnded,
    })
}

fn kit() -> Kit {
    let mut config = KitConfig {
        greetings: Some(GreetingsConfig {
            first: true,
            welcome_back_after_ms: Some(10 * MIN),
        }),
        milestones: Some(MilestonesConfig {
            hearts_every: Some(100),
            donations_every: Some(1000),
        }),
        tally: true,
        ignore: vec!["bot2".into()],
        ..KitConfig::default()
    };
    config.commands = vec![
        CommandConfig::new("hello").alias("hi"),
        CommandConfig::new("reset").allowed(Allowed::Managers),
        CommandConfig::new("stop").allowed(Allowed::Dj),
        CommandConfig::new("top").cooldown_ms(MIN),
    ];
    Kit::new(config)
}

/// What the kit said, one word each.
fn said(kit: &mut Kit, event: &Event, now: u64) -> Vec<String> {
    kit.on_event(None, event, now)
        .into_iter()
        .map(|a| match a {
            KitAction::Arrival(a) => match a.kind {
                ArrivalKind::First => format!("first {}", a.user.id),
                ArrivalKind::Back { away_ms } => format!("back {} {away_ms}", a.user.id),
            },
            KitAction::Command(c) => {
                format!("run {} {} {:?} {:?}", c.name, c.user.id, c.role, c.args)
            }
            KitAction::Refused(r) => format!("refuse {} {} {:?}", r.name, r.user.id, r.role),
            KitAction::Milestone(Milestone::Hearts { reached, total, .. }) => {
                format!("hearts {reached} {total}")
            }
            KitAction::Milestone(Milestone::Donated {
                user,
                reached,
                total,
                ..
            }) => {
                format!("donated {} {reached} {total}", user.id)
            }
            KitAction::BroadcastEnded(b) => format!("ended {:?} {}", b.live_id, b.tally.seen()),
            KitAction::Thanks(u) => format!("thanks {}", u.id),
        })
        .collect()
}

#[test]
fn a_room_cooldown_answers_a_command_once_for_everyone() {
    let config = KitConfig {
        commands: vec![CommandConfig::new("top")
            .room_cooldown_ms(5_000)
            .cooldown_ms(MIN)],
        ..KitConfig::default()
    };
    let mut k = Kit::new(config);
    // Fifty people type it within a second: answered once.
    let mut ran = Vec::new();
    for i in 0..50 {
        let who = format!("p{i}");
        ran.extend(said(&mut k, &chat(&who, "!top"), i * 20));
    }
    assert_eq!(ran, ["run top p0 Listener []"]);
    // After the room cooldown, someone else runs it; p0's own cooldown holds.
    assert!(said(&mut k, &chat("p0", "!top"), 5_000).is_empty());
    assert_eq!(
        said(&mut k, &chat("p1", "!top"), 5_001),
        ["run top p1 Listener []"]
    );
    assert!(said(&mut k, &chat("p2", "!top"), 9_000).is_empty());
}

#[test]
fn with_replies_configured_each_donation_is_to_be_thanked() {
    let config = KitConfig {
        replies: Some(crate::kit::RepliesConfig::default()),
        ..KitConfig::default()
    };
    let mut k = Kit::new(config);
    assert_eq!(said(&mut k, &donation("u", 5), 0), ["thanks u"]);
    assert_eq!(said(&mut k, &donation("u", 5), 1), ["thanks u"]);
}

#[test]
fn a_first_join_is_greeted_once_and_a_return_after_the_absence_again() {
    let mut k = kit();
    assert_eq!(said(&mut k, &join("u1", false), 0), ["first u1"]);
    // A rejoin soon after: no greeting.
    assert!(said(&mut k, &join("u1", false), MIN).is_empty());
    assert!(said(&mut k, &chat("u1", "hi all"), 2 * MIN).is_empty());
    // Back after ten minutes unseen.
    assert_eq!(
        said(&mut k, &join("u1", false), 12 * MIN),
        [format!("back u1 {}", 10 * MIN)]
    );
    assert!(k.greeted("u1"));
}

#[test]
fn without_presence_the_first_chat_is_the_arrival_and_hearts_are_not() {
    let mut k = kit();
    assert!(said(&mut k, &like("u2", 1), 0).is_empty());
    assert!(said(&mut k, &donation("u2", 10), 0).is_empty());
    assert_eq!(said(&mut k, &chat("u2", "hello"), 0), ["first u2"]);
    assert!(said(&mut k, &chat("u2", "again"), MIN).is_empty());
    // A chat after the absence is a return too.
    assert_eq!(
        said(&mut k, &chat("u2", "back"), 11 * MIN + 1),
        [format!("back u2 {}", 10 * MIN + 1)]
    );
}

#[test]
fn the_dj_is_never_greeted_nor_tallied() {
    let mut k = kit();
    assert!(said(&mut k, &dj_chat("hi"), 0).is_empty());
    assert!(said(&mut k, &like("dj", 50), 0).is_empty());
    assert!(!k.greeted("dj"));
    assert_eq!(k.tally().seen(), 0);
}

#[test]
fn commands_run_for_who_may_run_them() {
    let mut k = kit();
    said(&mut k, &join("m", true), 0);
    said(&mut k, &join("l", false), 0);
    let table = [
        (chat("l", "!hello"), "run hello l Listener []"),
        (chat("l", "!HI there"), "run hello l Listener [\"there\"]"),
        (chat("l", "!reset"), "refuse reset l Listener"),
        (chat("l", "!stop"), "refuse stop l Listener"),
        (chat("m", "!reset now"), "run reset m Manager [\"now\"]"),
        (chat("m", "!stop"), "refuse stop m Manager"),
        (dj_chat("!reset"), "run reset dj Dj []"),
        (dj_chat("!stop"), "run stop dj Dj []"),
    ];
    for (event, expected) in table {
        let out = said(&mut k, &event, MIN);
        assert_eq!(out.last().map(String::as_str), Some(expected), "{event:?}");
    }
    for message in ["hello", "!dance", "! hello", "!", "x !hello"] {
        assert!(
            said(&mut k, &chat("l", message), MIN).is_empty(),
            "{message}"
        );
    }
    // Another bot's post is never a command.
    assert_eq!(said(&mut k, &chat("bot2", "!hello"), MIN), ["first bot2"]);
    // A manager demoted at their next join loses the right.
    said(&mut k, &join("m", false), MIN);
    assert_eq!(
        said(&mut k, &chat("m", "!reset"), MIN),
        ["refuse reset m Listener"]
    );
}

#[test]
fn a_cooldown_holds_back_only_the_person_who_ran_it() {
    let mut k = kit();
    said(&mut k, &join("a", false), 0);
    said(&mut k, &join("b", false), 0);
    assert_eq!(
        said(&mut k, &chat("a", "!top"), 0),
        ["run top a Listener []"]
    );
    assert!(said(&mut k, &chat("a", "!top"), MIN - 1).is_empty());
    assert_eq!(
        said(&mut k, &chat("b", "!top"), MIN - 1),
        ["run top b Listener []"]
    );
    assert_eq!(
        said(&mut k, &chat("a", "!top"), MIN),
        ["run top a Listener []"]
    );
}

#[test]
fn milestones_for_the_broadcast_and_each_donor() {
    let mut k = kit();
    assert!(said(&mut k, &like("u", 60), 0).is_empty());
    assert_eq!(said(&mut k, &like("u", 60), 0), ["hearts 100 120"]);
    assert_eq!(said(&mut k, &like("v", 190), 0), ["hearts 300 310"]);
    assert!(said(&mut k, &donation("u", 900), 0).is_empty());
    assert_eq!(
        said(&mut k, &donation("u", 200), 0),
        ["donated u 1000 1100"]
    );
    assert!(said(&mut k, &donation("v", 999), 0).is_empty());
    assert_eq!(
        said(&mut k, &donation("v", 2001), 0),
        ["donated v 3000 3000"]
    );
}

#[test]
fn the_end_of_a_broadcast_hands_out_its_tally_and_starts_afresh() {
    let mut k = kit();
    said(&mut k, &join("u", false), 0);
    said(&mut k, &donation("u", 500), 0);
    said(&mut k, &dj_chat("bye"), 0);
    assert_eq!(said(&mut k, &live_ended(), 0), ["ended None 1"]);
    assert_eq!(k.tally().seen(), 0);
    assert!(!k.greeted("u"));
    // The next broadcast greets again; the DJ is still known.
    assert_eq!(said(&mut k, &join("u", false), MIN), ["first u"]);
    assert!(said(&mut k, &join("dj", false), MIN).is_empty());
}

#[test]
fn another_live_id_or_not_on_air_ends_the_broadcast_remembered() {
    let mut k = kit();
    assert!(k.on_live_id(7).is_none());
    said(&mut k, &join("u", false), 0);
    assert!(k.on_live_id(7).is_none(), "the same broadcast");
    match k.on_live_id(8) {
        Some(KitAction::BroadcastEnded(b)) => assert_eq!((b.live_id, b.end), (Some(7), None)),
        other => panic!("{other:?}"),
    }
    assert_eq!(k.live_id(), Some(8));
    said(&mut k, &join("u", false), 0);
    assert!(matches!(
        k.on_not_on_air(),
        Some(KitAction::BroadcastEnded(_))
    ));
    assert!(k.on_not_on_air().is_none(), "nothing left to end");
}

#[test]
fn the_state_round_trips_and_a_newer_one_is_refused() {
    let mut k = kit();
    k.on_live_id(42);
    said(&mut k, &join("u", true), 0);
    said(&mut k, &donation("u", 1200), 0);
    let state = k.unsaved_state().unwrap();
    assert!(k.unsaved_state().is_none(), "handed out once");
    let json = state.to_json();
    assert!(
        json.starts_with(r#"{"format":"onair.kit","version":1,"live_id":42,"#),
        "{json}"
    );
    let mut again = kit();
    again.restore(&KitState::from_json(json).unwrap());
    assert!(again.greeted("u") && again.is_manager("u"));
    assert_eq!(again.tally(), k.tally());
    // The milestone mark survives: 1200 was announced at 1000.
    assert!(said(&mut again, &donation("u", 100), 0).is_empty());
    for (text, error) in [
        (r#"{"format":"onair.kit","version":3}"#, "version 3"),
        (r#"{"format":"onair.tokens","version":1}"#, "format"),
        (r#"{"format":"onair.kit"}"#, "version is missing"),
        ("{", "line 1"),
    ] {
        let e = KitState::from_json(text).unwrap_err();
        assert!(e.to_string().contains(error), "{text}: {e}");
    }
}

/// One step of a generated broadcast night.
#[derive(Debug, Clone)]
enum Step {
    Join(u8),
    Chat(u8),
    Heart(u8),
    Advance(u32),
    Restart,
    End,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..6).prop_map(Step::Join),
        4 => (0u8..6).prop_map(Step::Chat),
        2 => (0u8..6).prop_map(Step::Heart),
        3 => (0u32..1_200_000).prop_map(Step::Advance),
        1 => Just(Step::Restart),
        1 => Just(Step::End),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the order of joins, chats, hearts, rejoins and restarts,
    /// each person gets exactly one first greeting per broadcast they gave
    /// a sign in, and a restart (the state saved, then given back) greets
    /// nobody twice and loses no heart.
    #[test]
    fn one_first_greeting_per_person_per_broadcast_across_restarts(
        steps in proptest::collection::vec(step(), 1..120)
    ) {
        let mut k = kit();
        let mut now = 0u64;
        let mut broadcast = 0usize;
        let mut firsts: std::collections::HashMap<(usize, String), u32> = Default::default();
        let mut signs: std::collections::HashSet<(usize, String)> = Default::default();
        let mut hearts = 0u64;
        for step in steps {
            let event = match step {
                Step::Join(p) => join(&format!("p{p}"), false),
                Step::Chat(p) => chat(&format!("p{p}"), "hello"),
                Step::Heart(p) => { hearts += 1; like(&format!("p{p}"), 1) }
                Step::Advance(ms) => { now += u64::from(ms); continue }
                Step::Restart => {
                    let state = k.state();
                    let mut fresh = kit();
                    fresh.restore(&KitState::from_json(state.to_json()).unwrap());
                    prop_assert_eq!(fresh.tally(), k.tally());
                    k = fresh;
                    continue;
                }
                Step::End => live_ended(),
            };
            if let Some(user) = event.user() {
                if !matches!(event, Event::Like(_)) {
                    signs.insert((broadcast, user.id.clone()));
                }
            }
            for action in k.on_event(None, &event, now) {
                match action {
                    KitAction::Arrival(a) if a.kind == ArrivalKind::First => {
                        *firsts.entry((broadcast, a.user.id.clone())).or_default() += 1;
                    }
                    KitAction::BroadcastEnded(b) => {
                        prop_assert_eq!(b.tally.total_hearts(), hearts);
                        hearts = 0;
                        broadcast += 1;
                    }
                    _ => {}
                }
            }
        }
        for key in &signs {
            prop_assert_eq!(firsts.get(key).copied(), Some(1), "{:?}", key);
        }
        prop_assert_eq!(firsts.len(), signs.len());
        prop_assert_eq!(k.tally().total_hearts(), hearts);
    }
}

#[test]
fn a_new_broadcast_hands_out_the_state_at_once_any_other_change_within_the_checkpoint() {
    let mut k = kit();
    assert!(
        k.due_state(0).is_none() && k.checkpoint_at().is_none(),
        "nothing changed"
    );
    // A first sign (greeted) and hearts: due CHECKPOINT_MS after the first change.
    said(&mut k, &join("u", false), 2_000);
    said(&mut k, &like("u", 1), 2_500);
    assert_eq!(k.checkpoint_at(), Some(2_000 + CHECKPOINT_MS));
    assert!(k.due_state(2_000 + CHECKPOINT_MS - 1).is_none());
    assert!(k.decided_state().is_none(), "no new broadcast");
    let state = k.due_state(2_000 + CHECKPOINT_MS).unwrap();
    assert!(
        state.to_json().contains(r#""greeted":true"#),
        "{}",
        state.to_json()
    );
    assert!(k.checkpoint_at().is_none());
    // A new liveId is saved before anything acts on it.
    assert!(k.on_live_id(42).is_none());
    assert!(k.decided_state().is_some());
    // A stop takes whatever is unsaved, once.
    said(&mut k, &like("u", 1), 9_500);
    assert!(k.unsaved_state().is_some());
    assert!(k.unsaved_state().is_none());
}
