//! The Rust guide's bot (`docs/rust.md`, "A bot in fifteen lines") is
//! `examples/bot.rs`: the guide shows that file word for word (checked
//! here), its doc test compiles it, and these tests run it against an
//! emulator as a newcomer would against `onair serve`: in-process for the
//! happy path (consent, the stream, a greeting, a command by its alias,
//! thanks for a donation, the token and state files, the stop when the DJ
//! disconnects the bot), and as a child process where what the person
//! running it sees matters: the line on stderr and the exit status for each
//! bad input, Ctrl-C in the middle of a broadcast and the restart after it.

// The example's `main`, `run` and the rest, at this crate's root.
include!("../examples/bot.rs");

/// The guide's bot as a process of its own: the tests below run this test
/// binary again with `ONAIR_GUIDE_BOT_CHILD` set and this one test selected,
/// so what runs is the example's `main`, with its exit status and stderr.
#[test]
#[ignore = "the guide's bot, run as a child process by the tests in `guide`"]
fn guide_bot_child() {
    if std::env::var_os("ONAIR_GUIDE_BOT_CHILD").is_some() {
        main();
    }
}

mod guide {
    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use onair::kit::{KitConfig, KitState};
    use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    use onair_emulator::{Emulator, Running};
    use onair_tokio::{BotEvent, Driver, FileStore};
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

    /// What the bots said in chat, in order.
    async fn said(c: &str) -> Vec<String> {
        control(c, "/chat", None).await["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The names a welcome says ("Welcome, P2, P3 and P4! 🎧": the three
    /// of them; merged when several wait), none for another message.
    fn welcomed(message: &str) -> Vec<String> {
        let Some(list) = message
            .strip_prefix("Welcome, ")
            .and_then(|m| m.strip_suffix("! 🎧"))
        else {
            return Vec::new();
        };
        list.replace(" and ", ", ")
            .split(", ")
            .map(str::to_owned)
            .collect()
    }

    /// A fresh folder for one run's files.
    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("onair-guide-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
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
        let dir = folder("happy");
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
        let bot = std::thread::spawn(|| {
            let runtime = tokio::runtime::Runtime::new().expect("runtime");
            runtime.block_on(super::run()).map_err(|e| e.to_string())
        });

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
        until("three answers", async || said(&c).await.len() >= 3).await;
        assert_eq!(
            said(&c).await,
            ["Welcome, Mina! 🎧", "Hello, Mina!", "Thank you, Mina!"]
        );

        // The pair was saved at once, the kit's memory within two seconds.
        let tokens: Value =
            serde_json::from_slice(&std::fs::read(dir.join("tokens.json")).expect("tokens.json"))
                .expect("tokens JSON");
        assert_eq!(tokens["format"], "onair.tokens");
        until("state.json", async || dir.join("state.json").exists()).await;

        // The DJ disconnects the bot: its tokens are revoked, it stops and
        // says what to do; the dead pair is deleted, so a restart with a
        // fresh code works.
        control(&c, "/integration/disconnect", Some(json!({}))).await;
        until("the bot to stop", async || bot.is_finished()).await;
        let stopped = bot.join().expect("the bot's thread").expect_err("a stop");
        assert_eq!(
            stopped,
            "stopped: re-authorize: refresh rejected (invalid_grant): the DJ must authorize \
             again. The DJ must connect the bot: set ONAIR_CODE to a fresh consent code and \
             start it again"
        );
        assert!(
            !dir.join("tokens.json").exists(),
            "the dead pair is deleted"
        );
        emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The guide's bot running as a child process; its stderr, line by line.
    struct GuideBot {
        child: std::process::Child,
        lines: Arc<Mutex<Vec<String>>>,
        reader: Option<std::thread::JoinHandle<()>>,
    }

    /// How a run of the guide's bot ended.
    #[derive(Debug)]
    struct Exit {
        /// The exit status (`None`: killed by a signal).
        status: Option<i32>,
        /// What it wrote to stderr, line by line.
        stderr: Vec<String>,
    }

    impl GuideBot {
        /// Starts the guide's bot in `dir` with exactly the `ONAIR_*`
        /// variables given.
        fn start(dir: &Path, vars: &[(&str, &str)]) -> GuideBot {
            let mut command = Command::new(std::env::current_exe().expect("this test binary"));
            command
                .args(["guide_bot_child", "--exact", "--ignored", "--nocapture"])
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            for (name, _) in std::env::vars_os() {
                if name.to_string_lossy().starts_with("ONAIR_") {
                    command.env_remove(name);
                }
            }
            command.env("ONAIR_GUIDE_BOT_CHILD", "1");
            for (name, value) in vars {
                command.env(name, value);
            }
            let mut child = command.spawn().expect("the guide's bot");
            let stderr = child.stderr.take().expect("stderr");
            let lines = Arc::new(Mutex::new(Vec::new()));
            let sink = Arc::clone(&lines);
            let reader = std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    sink.lock().expect("lines").push(line);
                }
            });
            GuideBot {
                child,
                lines,
                reader: Some(reader),
            }
        }

        /// Whether it has not exited yet.
        fn is_running(&mut self) -> bool {
            matches!(self.child.try_wait(), Ok(None))
        }

        fn stderr(&self) -> Vec<String> {
            self.lines.lock().expect("lines").clone()
        }

        /// Waits until a line on stderr starts with `prefix`; returns it.
        async fn line(&self, prefix: &str, limit: Duration) -> String {
            let deadline = Instant::now() + limit;
            loop {
                if let Some(line) = self.stderr().into_iter().find(|l| l.starts_with(prefix)) {
                    return line;
                }
                assert!(
                    Instant::now() < deadline,
                    "no line starting with {prefix:?} within {limit:?}: {:?}",
                    self.stderr()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }

        /// Sends it a signal (`INT`, `TERM`).
        fn signal(&self, name: &str) {
            let sent = Command::new("kill")
                .args([format!("-{name}"), self.child.id().to_string()])
                .status()
                .expect("kill");
            assert!(sent.success(), "kill -{name}");
        }

        /// Waits for it to exit (at most `limit`).
        async fn exit(mut self, limit: Duration) -> Exit {
            let deadline = Instant::now() + limit;
            let status = loop {
                if let Some(status) = self.child.try_wait().expect("wait") {
                    break status;
                }
                if Instant::now() > deadline {
                    let _ = self.child.kill();
                    panic!("still running after {limit:?}: {:?}", self.stderr());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            if let Some(reader) = self.reader.take() {
                reader.join().expect("stderr reader");
            }
            Exit {
                status: status.code(),
                stderr: self.stderr(),
            }
        }
    }

    impl Drop for GuideBot {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// An emulator, its control URL and the guide bot's variables for it.
    struct Service {
        emu: Running,
        c: String,
        base_url: String,
        client_id: String,
        client_secret: String,
        redirect_uri: String,
    }

    impl Service {
        async fn start() -> Service {
            let emu = Emulator::builder().start().await.expect("emulator");
            let app = emu.app();
            Service {
                c: emu.control_url(),
                base_url: emu.base_url(),
                client_id: app.client_id,
                client_secret: app.client_secret,
                redirect_uri: app.redirect_uri,
                emu,
            }
        }

        async fn code(&self) -> String {
            control(&self.c, "/consent", Some(json!({}))).await["code"]
                .as_str()
                .expect("code")
                .to_owned()
        }

        /// The guide's variables, with `code` when given.
        fn vars<'a>(&'a self, code: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
            let mut vars = vec![
                ("ONAIR_BASE_URL", self.base_url.as_str()),
                ("ONAIR_CLIENT_ID", self.client_id.as_str()),
                ("ONAIR_CLIENT_SECRET", self.client_secret.as_str()),
                ("ONAIR_REDIRECT_URI", self.redirect_uri.as_str()),
            ];
            vars.extend(code.map(|code| ("ONAIR_CODE", code)));
            vars
        }

        fn config(&self) -> BotConfig {
            let creds =
                ClientCredentials::new(&self.client_id, self.client_secret.clone()).expect("creds");
            let mut config = BotConfig::new(BaseUrl::new(&self.base_url).expect("url"), creds);
            config.kit = KitConfig::from_json(super::KIT).expect("the guide's kit");
            config
        }

        /// Exchanges `code` in-process, saving the pair in `dir/tokens.json`
        /// as the guide's bot would.
        async fn exchange(&self, code: &str, dir: &Path) {
            let store = FileStore::new(dir.join("tokens.json"));
            let mut config = self.config();
            config.events = false;
            let mut driver = Driver::from_store(config, store).expect("store");
            driver.bot_mut().authorize(code, &self.redirect_uri);
            let renewed = tokio::time::timeout(Duration::from_secs(10), async {
                loop {
                    match driver.next().await {
                        Some(BotEvent::TokensRenewed(_)) => return,
                        Some(BotEvent::Stopped(stop)) => panic!("stopped: {stop}"),
                        None => panic!("the driver ended"),
                        Some(_) => {}
                    }
                }
            });
            renewed.await.expect("a pair in time");
            driver.shutdown(false).await.expect("shutdown");
        }

        /// The requests the service received on `path`.
        async fn requests(&self, path: &str) -> Vec<Value> {
            let all = control(&self.c, "/requests", None).await;
            all["requests"]
                .as_array()
                .expect("requests")
                .iter()
                .filter(|r| r["path"] == path)
                .cloned()
                .collect()
        }
    }

    const FRESH_CODE: &str = "The DJ must connect the bot: set ONAIR_CODE to a fresh consent \
                              code and start it again";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wrong_client_secret_stops_with_invalid_client() {
        let service = Service::start().await;
        let dir = folder("wrong-secret");
        let code = service.code().await;
        let mut vars = service.vars(Some(&code));
        vars.retain(|(name, _)| *name != "ONAIR_CLIENT_SECRET");
        vars.push(("ONAIR_CLIENT_SECRET", "not-the-secret"));
        let exit = GuideBot::start(&dir, &vars)
            .exit(Duration::from_secs(15))
            .await;
        assert_eq!(exit.status, Some(1), "{exit:?}");
        assert_eq!(
            exit.stderr,
            [
                "token: invalid_client (HTTP 401, invalid_client): stop",
                "stopped: client credentials rejected: fix the configuration"
            ]
        );
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wrong_client_secret_with_saved_tokens_is_found_at_start() {
        let service = Service::start().await;
        let dir = folder("wrong-secret-saved");
        service.exchange(&service.code().await, &dir).await;
        let mut vars = service.vars(None);
        vars.retain(|(name, _)| *name != "ONAIR_CLIENT_SECRET");
        vars.push(("ONAIR_CLIENT_SECRET", "not-the-secret"));
        let started = Instant::now();
        let exit = GuideBot::start(&dir, &vars)
            .exit(Duration::from_secs(15))
            .await;
        assert!(started.elapsed() < Duration::from_secs(10), "at start");
        assert_eq!(exit.status, Some(1), "{exit:?}");
        assert_eq!(
            exit.stderr,
            ["stopped: client credentials rejected: fix the configuration"]
        );
        // Found by the credentials check (a revoke of a token that does not
        // exist), not by a refresh: the saved pair is still the only one.
        let revokes = service.requests("/v1/oauth/revoke").await;
        assert_eq!(revokes.len(), 1, "{revokes:?}");
        assert_eq!(revokes[0]["oauthError"], "invalid_client", "{revokes:?}");
        assert!(dir.join("tokens.json").exists(), "the pair is kept");
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// What the guide's bot says when the service refuses its code.
    fn refused_code() -> [String; 2] {
        [
            "token: invalid_grant (HTTP 400, invalid_grant): reauthorize".to_owned(),
            format!(
                "stopped: re-authorize: code exchange failed (HTTP 400 invalid_grant): a new \
                 consent code is needed. {FRESH_CODE}"
            ),
        ]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_code_stops_with_what_the_dj_must_do() {
        let service = Service::start().await;
        let dir = folder("expired");
        let code = service.code().await;
        control(&service.c, "/clock/advance", Some(json!({"ms": 61_000}))).await;
        let exit = GuideBot::start(&dir, &service.vars(Some(&code)))
            .exit(Duration::from_secs(15))
            .await;
        assert_eq!(exit.status, Some(1), "{exit:?}");
        assert_eq!(exit.stderr, refused_code());
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reused_code_stops_with_what_the_dj_must_do() {
        let service = Service::start().await;
        let dir = folder("reused");
        let code = service.code().await;
        service.exchange(&code, &folder("reused-first")).await;
        let exit = GuideBot::start(&dir, &service.vars(Some(&code)))
            .exit(Duration::from_secs(15))
            .await;
        assert_eq!(exit.status, Some(1), "{exit:?}");
        assert_eq!(exit.stderr, refused_code());
        let exchanges = service.requests("/v1/oauth/token").await;
        assert_eq!(exchanges.len(), 2, "{exchanges:?}");
        assert_eq!(exchanges[0]["credential"], exchanges[1]["credential"]);
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_code_says_what_the_dj_must_do() {
        let service = Service::start().await;
        let dir = folder("no-code");
        let exit = GuideBot::start(&dir, &service.vars(None))
            .exit(Duration::from_secs(15))
            .await;
        assert_eq!(exit.status, Some(1), "{exit:?}");
        assert_eq!(
            exit.stderr,
            [format!(
                "no consent code (ONAIR_CODE is not set). {FRESH_CODE}"
            )]
        );
        assert!(service.requests("/v1/oauth/token").await.is_empty());
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_garbage_token_file_is_named_with_what_to_do() {
        let service = Service::start().await;
        let dir = folder("garbage-tokens");
        std::fs::write(dir.join("tokens.json"), "not json at all").expect("write");
        let exit = GuideBot::start(&dir, &service.vars(None))
            .exit(Duration::from_secs(15))
            .await;
        assert_eq!(exit.status, Some(1), "{exit:?}");
        assert_eq!(
            exit.stderr,
            [
                "tokens.json: not a token file (stored tokens are not valid (error at line 1 \
              column 2)); restore a good copy, or delete it and give the bot a new consent code"
            ]
        );
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_garbage_state_file_is_named_with_what_to_do() {
        let service = Service::start().await;
        let dir = folder("garbage-state");
        std::fs::write(dir.join("state.json"), "{oops").expect("write");
        let exit = GuideBot::start(&dir, &service.vars(None))
            .exit(Duration::from_secs(15))
            .await;
        assert_eq!(exit.status, Some(1), "{exit:?}");
        assert_eq!(
            exit.stderr,
            [
                "state.json: not a kit state file (stored kit state: not valid (error at line 1 \
              column 2)); restore a good copy, or delete it (the bot then starts with an empty \
              memory and may greet people again)"
            ]
        );
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_missing_variable_is_named() {
        let service = Service::start().await;
        let dir = folder("missing-var");
        let mut vars = service.vars(None);
        vars.retain(|(name, _)| *name != "ONAIR_BASE_URL");
        let exit = GuideBot::start(&dir, &vars)
            .exit(Duration::from_secs(15))
            .await;
        assert_eq!(exit.status, Some(1), "{exit:?}");
        assert_eq!(exit.stderr, ["ONAIR_BASE_URL is not set"]);
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A port on 127.0.0.1 where nothing listens (connections are refused).
    async fn dead_port() -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        listener.local_addr().expect("addr").port()
    }

    /// From now on, connections to `port` reach the emulator at `to`.
    async fn forward(port: u16, to: std::net::SocketAddr) {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("the dead port, now alive");
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_port_without_tokens_is_said_and_does_not_spend_the_code() {
        let service = Service::start().await;
        let dir = folder("dead-no-tokens");
        let code = service.code().await;
        let port = dead_port().await;
        let base_url = format!("http://127.0.0.1:{port}");
        let mut vars = service.vars(Some(&code));
        vars.retain(|(name, _)| *name != "ONAIR_BASE_URL");
        vars.push(("ONAIR_BASE_URL", &base_url));
        let bot = GuideBot::start(&dir, &vars);
        let said = bot
            .line("the service cannot be reached", Duration::from_secs(10))
            .await;
        assert_eq!(
            said,
            "the service cannot be reached (token: connection failed, not sent); retrying"
        );
        // The service comes up on that port: the code, never sent, is
        // exchanged then, and the bot streams.
        forward(port, service.emu.addr()).await;
        control(&service.c, "/live/start", Some(json!({}))).await;
        until("the bot's stream", async || {
            control(&service.c, "/state", None).await["openStreams"] == 1
        })
        .await;
        let exchanges = service.requests("/v1/oauth/token").await;
        assert_eq!(exchanges.len(), 1, "{exchanges:?}");
        assert!(exchanges[0]["oauthError"].is_null(), "{exchanges:?}");
        assert!(dir.join("tokens.json").exists());
        bot.signal("INT");
        let exit = bot.exit(Duration::from_secs(10)).await;
        assert_eq!(exit.status, Some(0), "{exit:?}");
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_port_with_tokens_is_said_at_once_and_ctrl_c_exits_0() {
        let service = Service::start().await;
        let dir = folder("dead-tokens");
        service.exchange(&service.code().await, &dir).await;
        let saved = std::fs::read(dir.join("tokens.json")).expect("tokens.json");
        let base_url = format!("http://127.0.0.1:{}", dead_port().await);
        let mut vars = service.vars(None);
        vars.retain(|(name, _)| *name != "ONAIR_BASE_URL");
        vars.push(("ONAIR_BASE_URL", &base_url));
        let started = Instant::now();
        let bot = GuideBot::start(&dir, &vars);
        let said = bot
            .line("the service cannot be reached", Duration::from_secs(10))
            .await;
        assert!(started.elapsed() < Duration::from_secs(5), "at once");
        // The first request to fail: the credentials check or the stream,
        // sent together at a start with tokens.
        let failed = |endpoint| {
            format!(
                "the service cannot be reached ({endpoint}: connection failed, not sent); retrying"
            )
        };
        assert!(
            said == failed("revoke") || said == failed("events"),
            "{said}"
        );
        bot.signal("INT");
        let exit = bot.exit(Duration::from_secs(10)).await;
        assert_eq!(exit.status, Some(0), "{exit:?}");
        assert!(
            exit.stderr
                .iter()
                .all(|l| l.starts_with("the service cannot be reached")),
            "{exit:?}"
        );
        let kept = std::fs::read(dir.join("tokens.json")).expect("tokens.json");
        assert_eq!(kept, saved, "the pair is kept as it was");
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_second_ctrl_c_exits_at_once() {
        // A service that takes the code exchange and never answers: the
        // first Ctrl-C waits for that answer (a pair to save), the second
        // does not.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("addr"));
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&accepted);
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(socket);
            }
        });
        let dir = folder("second-ctrl-c");
        let vars = [
            ("ONAIR_BASE_URL", base_url.as_str()),
            ("ONAIR_CLIENT_ID", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
            ("ONAIR_CLIENT_SECRET", "secret"),
            ("ONAIR_REDIRECT_URI", "http://127.0.0.1/callback"),
            ("ONAIR_CODE", "a-code"),
        ];
        let mut bot = GuideBot::start(&dir, &vars);
        until("the code exchange", async || {
            accepted.load(std::sync::atomic::Ordering::SeqCst) > 0
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        bot.signal("INT");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            bot.is_running(),
            "still waiting for the exchange: {:?}",
            bot.stderr()
        );
        let second = Instant::now();
        bot.signal("INT");
        let exit = bot.exit(Duration::from_secs(5)).await;
        assert!(second.elapsed() < Duration::from_secs(2), "at once");
        assert_eq!(exit.status, Some(130), "{exit:?}");
        assert!(exit.stderr.is_empty(), "{exit:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The kit's tally in `dir/state.json`, as the ledger's `totals` JSON.
    fn saved_tally(dir: &Path, config: BotConfig) -> Value {
        let state = std::fs::read(dir.join("state.json")).expect("state.json");
        let state = KitState::from_json(&state).expect("kit state");
        let bot = Bot::new(config, None, 1).with_kit_state(&state);
        let tally = bot.kit().expect("kit").tally().to_json();
        serde_json::from_str(&tally).expect("tally JSON")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ctrl_c_mid_broadcast_saves_all_it_read_and_a_restart_greets_nobody_twice() {
        let service = Service::start().await;
        let c = service.c.clone();
        let dir = folder("sigint");
        control(&c, "/state", Some(json!({"botManager": true}))).await;
        control(&c, "/live/start", Some(json!({}))).await;
        let code = service.code().await;
        let bot = GuideBot::start(&dir, &service.vars(Some(&code)));
        until("the bot's stream", async || {
            control(&c, "/state", None).await["openStreams"] == 1
        })
        .await;
        let person = |i: usize| json!({"id": format!("u{i}"), "nickname": format!("P{i}")});
        let emit = |event: &'static str, data: Value| {
            let c = c.clone();
            async move {
                let sent = control(&c, "/emit", Some(json!({"event": event, "data": data}))).await;
                assert_eq!(sent["delivered"], 1, "{event}");
            }
        };
        emit("presence", json!({"user": person(1)})).await;
        until("the first greeting", async || {
            said(&c).await.contains(&"Welcome, P1! 🎧".to_owned())
        })
        .await;
        // A burst, then Ctrl-C at once: what the service wrote before the
        // signal must all be counted and saved.
        for i in 2..=6 {
            emit("presence", json!({"user": person(i)})).await;
        }
        for i in 0..150 {
            let like = json!({"user": person(1 + i % 6), "type": "PAID", "amount": 1, "combo": 2});
            emit("like", like).await;
        }
        emit("donation", json!({"user": person(3), "amount": 700})).await;
        bot.signal("INT");
        let exit = bot.exit(Duration::from_secs(15)).await;
        assert_eq!(exit.status, Some(0), "{exit:?}");
        // At most the greetings the stop held, said as such (the kit
        // state keeps them for the restart).
        assert!(
            exit.stderr
                .iter()
                .all(|l| l.starts_with("dropped ") && l.contains("the bot stopped")),
            "{exit:?}"
        );

        // Every frame written before the signal is in the saved tally.
        let ledger = control(&c, &format!("/ledger?clientId={}", service.client_id), None).await;
        let truth = &ledger["broadcasts"][0]["bots"][0]["totals"];
        let tally = saved_tally(&dir, service.config());
        assert_eq!(&tally, truth);
        assert_eq!(tally["hearts"], 300);
        assert_eq!(tally["donated"], 700);

        // The restart: the same broadcast, the same people back; nobody is
        // greeted or thanked twice, nobody whose reply the stop held is
        // forgotten, and the bot is live (it answers).
        let greetings_before = said(&c).await;
        let bot = GuideBot::start(&dir, &service.vars(None));
        until("the second stream", async || {
            control(&c, "/state", None).await["openStreams"] == 1
        })
        .await;
        for i in 1..=6 {
            emit("presence", json!({"user": person(i)})).await;
        }
        emit("chat", json!({"user": person(1), "message": "!hi"})).await;
        until("the answer", async || {
            said(&c).await.contains(&"Hello, P1!".to_owned())
        })
        .await;
        until("every greeting and the thanks", async || {
            let all = said(&c).await;
            (1..=6).all(|i| all.iter().any(|m| welcomed(m).contains(&format!("P{i}"))))
                && all.iter().any(|m| m == "Thank you, P3!")
        })
        .await;
        let all = said(&c).await;
        for i in 1..=6 {
            let name = format!("P{i}");
            let times = all.iter().filter(|m| welcomed(m).contains(&name)).count();
            assert_eq!(times, 1, "{name} welcomed {times} times: {all:?}");
        }
        let thanks = all.iter().filter(|m| *m == "Thank you, P3!").count();
        assert_eq!(thanks, 1, "P3 thanked once: {all:?}");
        let after: Vec<&String> = all[greetings_before.len()..]
            .iter()
            .filter(|m| welcomed(m).is_empty() && *m != "Thank you, P3!")
            .collect();
        assert_eq!(
            after,
            ["Hello, P1!"],
            "after the restart: the answer and the replies the stop held"
        );
        bot.signal("TERM");
        let exit = bot.exit(Duration::from_secs(15)).await;
        assert_eq!(exit.status, Some(0), "{exit:?}");
        service.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
