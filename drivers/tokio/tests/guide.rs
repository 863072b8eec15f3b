//! The Rust guide's bot (`docs/rust.md`, "A bot in fifteen lines") is
//! `examples/bot.rs`: the guide shows that file word for word (checked
//! here), its doc test compiles it, and this test runs it against an
//! emulator in-process, as a newcomer would against `onair serve`: consent,
//! the stream, a greeting, a command by its alias, thanks for a donation,
//! the token and state files, and the stop when the DJ disconnects the bot.

// The example's `main` and `name`, at this crate's root.
include!("../examples/bot.rs");

mod guide {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use onair_emulator::Emulator;
    use serde_json::{json, Value};

    const ROOT: &str = env!("CARGO_MANIFEST_DIR");

    #[test]
    fn the_guide_shows_the_example_bot_word_for_word() {
        let guide = std::fs::read_to_string(Path::new(ROOT).join("../../docs/rust.md"))
            .expect("docs/rust.md");
        let example = std::fs::read_to_string(Path::new(ROOT).join("examples/bot.rs"))
            .expect("examples/bot.rs");
        let block = format!("```rust,no_run\n{example}```\n");
        assert!(
            guide.contains(&block),
            "docs/rust.md must show examples/bot.rs as one ```rust,no_run block, word for word"
        );
    }

    async fn control(url: &str, path: &str, body: Option<Value>) -> Value {
        let http = reqwest::Client::new();
        let request = match body {
            Some(body) => http.post(format!("{url}{path}")).body(body.to_string()),
            None => http.get(format!("{url}{path}")),
        };
        let response = request.send().await.expect("control call");
        assert!(
            response.status().is_success(),
            "{path}: {}",
            response.status()
        );
        serde_json::from_slice(&response.bytes().await.expect("body")).expect("JSON")
    }

    async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while !done().await {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_guide_bot_greets_answers_thanks_and_stops_when_the_dj_disconnects() {
        let emu = Emulator::builder().start().await.expect("emulator");
        let c = emu.control_url();
        let app = emu.app();
        let code = control(&c, "/consent", Some(json!({}))).await["code"]
            .as_str()
            .expect("code")
            .to_owned();
        control(&c, "/state", Some(json!({"botManager": true}))).await;
        control(&c, "/live/start", Some(json!({}))).await;

        // The bot's files land in its working directory.
        let dir = std::env::temp_dir().join(format!("onair-guide-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::env::set_current_dir(&dir).expect("cd");
        for (name, value) in [
            ("ONAIR_BASE_URL", emu.base_url()),
            ("ONAIR_CLIENT_ID", app.client_id.clone()),
            ("ONAIR_CLIENT_SECRET", app.client_secret.clone()),
            ("ONAIR_CODE", code),
            ("ONAIR_REDIRECT_URI", app.redirect_uri.clone()),
        ] {
            std::env::set_var(name, value);
        }
        // Its own runtime, on its own thread, as `cargo run` would.
        let bot = std::thread::spawn(|| super::main().map_err(|e| e.to_string()));

        until("the bot's stream", async || {
            control(&c, "/state", None).await["openStreams"] == 1
        })
        .await;
        let mina = json!({"id": "u1", "nickname": "Mina"});
        for (event, data) in [
            ("presence", json!({"user": mina})),
            ("chat", json!({"user": mina, "message": "!hi"})),
            ("donation", json!({"user": mina, "amount": 500})),
        ] {
            let sent = control(&c, "/emit", Some(json!({"event": event, "data": data}))).await;
            assert_eq!(sent["delivered"], 1, "{event}");
        }
        until("three answers", async || {
            control(&c, "/chat", None).await["messages"]
                .as_array()
                .is_some_and(|m| m.len() >= 3)
        })
        .await;
        let said: Vec<Value> = control(&c, "/chat", None).await["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["message"].clone())
            .collect();
        assert_eq!(said, ["Welcome, Mina!", "Hello, Mina!", "Thank you, Mina!"]);

        // The pair was saved at once, the kit's memory within two seconds.
        let tokens: Value =
            serde_json::from_slice(&std::fs::read(dir.join("tokens.json")).expect("tokens.json"))
                .expect("tokens JSON");
        assert_eq!(tokens["format"], "onair.tokens");
        until("state.json", async || dir.join("state.json").exists()).await;

        // The DJ disconnects the bot: its tokens are revoked, it stops.
        control(&c, "/integration/disconnect", Some(json!({}))).await;
        until("the bot to stop", async || bot.is_finished()).await;
        let stopped = bot.join().expect("the bot's thread").expect_err("a stop");
        assert!(stopped.starts_with("stopped: re-authorize"), "{stopped}");
        emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
