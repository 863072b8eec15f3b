//! Failure isolation, in-process against the emulator on 127.0.0.1: three
//! DJs' bots; one row damaged in the database file (its sealed pair, its
//! kit state, its pair sealed under another key) stops or limits that bot
//! alone while the other two read their broadcast; the wrong key for every
//! row, or a truncated database file, stops the start at once, said as
//! such; a bot stopped because its refresh was refused forgets the dead
//! pair and a restart sends no refresh with it.

mod common;

use std::time::{Duration, Instant};

use common::{bot_ids, browser, consent, control, grants, until, Host, Setup, KEY};
use serde_json::json;

/// 32 bytes of 7: another key.
const OTHER_KEY: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
const LOG: &str = "info,sqlx=warn,hyper=warn,reqwest=warn";

const DJS: [&str; 3] = ["ayla", "bo", "cem"];

impl Setup {
    /// The database file on its own (the host stopped).
    async fn sql(&self, sql: &str, value: Option<String>, id: i64) {
        use sqlx::Connection;
        let url = format!("sqlite://{}", self.db_path().display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("db");
        let query = sqlx::query(sql);
        let query = match value {
            Some(v) => query.bind(v),
            None => query,
        };
        query.bind(id).execute(&mut conn).await.expect(sql);
        conn.close().await.expect("close");
    }

    async fn column(&self, column: &str, id: i64) -> Option<String> {
        use sqlx::Connection;
        let url = format!("sqlite://{}", self.db_path().display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("db");
        let value: Option<String> =
            sqlx::query_scalar(&format!("SELECT {column} FROM integrations WHERE id = ?"))
                .bind(id)
                .fetch_one(&mut conn)
                .await
                .expect("column");
        conn.close().await.expect("close");
        value
    }

    /// Three DJs connect a bot each and go on air; their ids (and their
    /// browsers, signed in).
    async fn three_bots(&self, host: &Host) -> Vec<i64> {
        self.three_djs(host).await.0
    }

    async fn three_djs(&self, host: &Host) -> (Vec<i64>, Vec<reqwest::Client>) {
        let mut browsers = Vec::new();
        for dj in DJS {
            let b = browser();
            consent(&b, &host.at("/connect"), dj).await;
            browsers.push(b);
            control(&self.emu, "/live/start", Some(json!({"dj": dj}))).await;
        }
        let bots = host.api("/api/bots").await;
        let ids = bot_ids(&bots);
        assert_eq!(ids.len(), 3, "{bots}");
        for id in &ids {
            until("every bot on air", Duration::from_secs(15), || async {
                host.bot(*id).await["state"] == "connected"
            })
            .await;
        }
        (ids, browsers)
    }

    /// A host with `key` whose start is refused within `limit`, at once
    /// (under 2 s): why.
    async fn refused_start(&self, key: &str, limit: Duration) -> String {
        let started = Instant::now();
        let host = self.host(key).await;
        let ended = tokio::time::timeout(limit, host.task)
            .await
            .expect("the start stops at once")
            .expect("the host task");
        let err = ended.expect_err("refused").to_string();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        err
    }

    /// A heart for `dj`'s broadcast reaches bot `id`.
    async fn reads(&self, host: &Host, id: i64, dj: &str) {
        let before = host.bot(id).await["hearts"].as_u64().unwrap_or(0);
        let like =
            json!({"dj": dj, "event": "like", "data": {"user": {"id": "u1", "nickname": "Mina"}}});
        let emitted = control(&self.emu, "/emit", Some(like)).await;
        assert_eq!(emitted["delivered"], 1, "{emitted}");
        until(
            &format!("bot {id} reads {dj}'s heart"),
            Duration::from_secs(10),
            || async { host.bot(id).await["hearts"].as_u64().unwrap_or(0) > before },
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_damaged_row_stops_one_bot_and_what_concerns_all_stops_the_start() {
    let log = common::log(LOG);
    let setup = Setup::new("isolation").await;
    let host = setup.host(KEY).await;
    let (ids, browsers) = setup.three_djs(&host).await;
    host.stop().await;
    let (one, two, three) = (ids[0], ids[1], ids[2]);
    let pair = setup.column("tokens", two).await.expect("a stored pair");
    let state = setup.column("kit_state", two).await.expect("a kit state");

    // 1. Its kit state damaged: the bot starts without memory, says so.
    setup
        .sql(
            "UPDATE integrations SET kit_state = ? WHERE id = ?",
            Some("{\"format\":\"onair.kit\",\"ver".to_owned()),
            two,
        )
        .await;
    let host = setup.host(KEY).await;
    for id in [one, two, three] {
        until("every bot on air", Duration::from_secs(15), || async {
            host.bot(id).await["state"] == "connected"
        })
        .await;
    }
    let view = host.bot(two).await;
    assert!(
        view["warning"]
            .as_str()
            .is_some_and(|w| w.contains("started without it")),
        "{view}"
    );
    setup.reads(&host, two, DJS[1]).await;
    setup.reads(&host, one, DJS[0]).await;
    assert_eq!(
        log.text()
            .matches("the stored kit state does not read: the bot starts without memory")
            .count(),
        1,
        "said once in the log"
    );
    host.stop().await;

    // 2. Its pair damaged, 3. its pair sealed under another key: that bot
    // asks for consent, the two others read their broadcast.
    let other = onair_host::crypto::TokenCipher::from_base64(OTHER_KEY).expect("key");
    let plain = onair_host::crypto::TokenCipher::from_base64(KEY)
        .expect("key")
        .open(&pair, format!("onair-host:integration:{two}").as_bytes())
        .expect("the pair opens");
    let foreign = other.seal(&plain, format!("onair-host:integration:{two}").as_bytes());
    let mut damaged: Vec<char> = pair.chars().collect();
    let at = damaged.len() - 10;
    damaged[at] = if damaged[at] == 'A' { 'B' } else { 'A' };
    let damaged: String = damaged.into_iter().collect();
    for (case, value) in [("damaged", damaged), ("another key", foreign)] {
        setup
            .sql(
                "UPDATE integrations SET tokens = ? WHERE id = ?",
                Some(value),
                two,
            )
            .await;
        let seen = log.text().len();
        let host = setup.host(KEY).await;
        until(
            &format!("{case}: the bot asks for consent"),
            Duration::from_secs(15),
            || async {
                let v = host.bot(two).await;
                v["state"] == "needs_consent"
                    && v["reconnect"] == true
                    && v["stop"].to_string().contains("unreadable_pair")
            },
        )
        .await;
        for id in [one, three] {
            until("the others on air", Duration::from_secs(15), || async {
                host.bot(id).await["state"] == "connected"
            })
            .await;
        }
        setup.reads(&host, one, DJS[0]).await;
        setup.reads(&host, three, DJS[2]).await;
        assert!(host.runs());
        let said = log.text()[seen..].to_owned();
        assert!(
            said.contains("the stored pair does not open: the bot needs the DJ's consent"),
            "{case}: {said}"
        );
        assert_eq!(host.bot(two).await["state"], "needs_consent", "{case}");
        // Its re-connect link brings it back: a new pair over the one that
        // did not open, the bot on air again.
        consent(
            &browsers[1],
            &host.at(&format!("/connect?bot={two}")),
            DJS[1],
        )
        .await;
        until(
            &format!("{case}: the bot is back"),
            Duration::from_secs(15),
            || async {
                let v = host.bot(two).await;
                v["state"] == "connected" && v["stop"].is_null()
            },
        )
        .await;
        setup.reads(&host, two, DJS[1]).await;
        host.stop().await;
    }
    // The intact pair back.
    setup
        .sql(
            "UPDATE integrations SET tokens = ? WHERE id = ?",
            Some(pair.clone()),
            two,
        )
        .await;
    assert_ne!(
        setup.column("kit_state", two).await.as_deref(),
        Some("{\"format\":\"onair.kit\",\"ver"),
        "the memory it started without was saved anew"
    );
    drop(state);

    // Every row under another key: the start stops at once, said as such.
    let err = setup.refused_start(OTHER_KEY, Duration::from_secs(5)).await;
    assert!(
        err.contains(
            "the key `ONAIR_HOST_KEY` is not this database's: its key check and its 3 stored pairs do not open with it"
        ),
        "{err}"
    );

    // A truncated database file: "damaged", at once.
    let path = setup.db_path();
    let len = std::fs::metadata(&path).expect("db").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("db");
    file.set_len(len / 2).expect("truncate");
    drop(file);
    let err = setup.refused_start(KEY, Duration::from_secs(10)).await;
    assert!(err.starts_with("damaged database file "), "{err}");
    setup.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_whose_refresh_was_refused_never_presents_the_dead_token_again() {
    let _log = common::log(LOG);
    let setup = Setup::new("dead-pair").await;
    let host = setup.host(KEY).await;
    let ids = setup.three_bots(&host).await;
    let one = ids[0];
    // DJ one disconnects the integration at the service: the bot's next
    // refresh is refused (invalid_grant).
    control(
        &setup.emu,
        "/integration/disconnect",
        Some(json!({"clientId": setup.client_id, "dj": DJS[0]})),
    )
    .await;
    control(&setup.emu, "/streams/drop", Some(json!({"dj": DJS[0]}))).await;
    until(
        "the bot stops for consent",
        Duration::from_secs(20),
        || async {
            let v = host.bot(one).await;
            v["reconnect"] == true && v["stop"].to_string().contains("reauthorize")
        },
    )
    .await;
    let requests = setup.requests().await;
    let refreshes = grants(&requests, "refresh_token");
    assert!(refreshes >= 1, "the refused refresh: {requests}");
    host.stop().await;

    // A restart: the bot needs consent, and nothing is sent with the dead
    // pair.
    let host = setup.host(KEY).await;
    for id in &ids[1..] {
        until("the others on air", Duration::from_secs(15), || async {
            host.bot(*id).await["state"] == "connected"
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let requests = setup.requests().await;
    assert_eq!(
        grants(&requests, "refresh_token"),
        refreshes,
        "no refresh after the restart"
    );
    let v = host.bot(one).await;
    assert_eq!(v["state"], "needs_consent", "{v}");
    assert_eq!(v["reconnect"], true, "{v}");
    host.stop().await;
    assert_eq!(
        setup.column("tokens", one).await,
        None,
        "the dead pair is forgotten"
    );
    setup.finish().await;
}

/// `key=NUMBER` in a log line.
fn field(line: &str, key: &str) -> Option<u64> {
    let at = line.find(&format!("{key}="))? + key.len() + 1;
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refresh_window_is_the_save_alone() {
    let log = common::log(LOG);
    let setup = Setup::new("refresh-window").await;
    let host = setup.host(KEY).await;
    let ids = setup.three_bots(&host).await;
    // Busy rooms while the pairs are refreshed: every bot's log lines go
    // to the store through the same writer.
    let busy = {
        let emu_control = setup.emu.control_url();
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..300 {
                for dj in DJS {
                    let chat = json!({"dj": dj, "event": "chat",
                        "data": {"user": {"id": format!("u{i}"), "nickname": "Mina"}, "message": format!("line {i}")}});
                    let _ = http
                        .post(format!("{emu_control}/emit"))
                        .body(chat.to_string())
                        .send()
                        .await;
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen = log.text().len();
    // An hour on: every access token is due, each bot refreshes.
    control(&setup.emu, "/clock/advance", Some(json!({"ms": 3_600_000}))).await;
    until("three refreshes", Duration::from_secs(20), || async {
        log.text()[seen..].matches("token refreshed").count() >= ids.len()
    })
    .await;
    let _ = busy.await;
    let said = log.text()[seen..].to_owned();
    let windows: Vec<u64> = said
        .lines()
        .filter(|l| l.contains("token refreshed"))
        .filter_map(|l| {
            assert!(l.contains("saved=true"), "{l}");
            field(l, "window_us")
        })
        .collect();
    eprintln!("refresh windows (µs, from the pair handed out to its commit): {windows:?}");
    assert_eq!(windows.len(), ids.len(), "{said}");
    // One statement on the tokens' own connection: a few milliseconds
    // (measured 0.5 to 10 ms in a debug build on a busy machine), not the
    // length of a queue of other writes (bounded loosely here: the
    // machine may be busier still).
    assert!(windows.iter().all(|w| *w < 200_000), "{windows:?}");
    host.stop().await;
    setup.finish().await;
}
