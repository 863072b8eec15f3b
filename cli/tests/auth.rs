//! `onair auth` end to end: the built binary against an emulator started in
//! the test on 127.0.0.1 (port 0).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use onair_emulator::{AppCredentials, Emulator, Running};

/// Every variable `onair auth` reads: cleared so the caller's environment
/// cannot leak into a test.
const VARS: [&str; 5] = [
    "ONAIR_BASE_URL",
    "ONAIR_CLIENT_ID",
    "ONAIR_CLIENT_SECRET",
    "ONAIR_TOKENS",
    "ONAIR_REDIRECT_URI",
];

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `onair auth <args>` with only `env` set, bounded in time.
async fn onair(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_onair"));
    cmd.arg("auth").args(args);
    for v in VARS {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output: Output = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::task::spawn_blocking(move || cmd.output()),
    )
    .await
    .expect("onair auth finished in time")
    .expect("join")
    .expect("ran onair");
    Run {
        code: output.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

async fn emulator() -> Running {
    Emulator::builder().start().await.expect("emulator")
}

async fn consent(emu: &Running) -> String {
    let v: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/consent", emu.control_url()))
        .body("{}")
        .send()
        .await
        .expect("consent")
        .json()
        .await
        .expect("consent json");
    v["code"].as_str().expect("code").to_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("onair-auth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `--base-url … --client-id … --client-secret … --tokens FILE`.
fn flags<'a>(emu_base: &'a str, app: &'a AppCredentials, tokens: &'a str) -> Vec<&'a str> {
    vec![
        "--base-url",
        emu_base,
        "--client-id",
        &app.client_id,
        "--client-secret",
        &app.client_secret,
        "--tokens",
        tokens,
    ]
}

fn stored(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("token file")).expect("token json")
}

fn assert_no_secret(run: &Run, secrets: &[&str]) {
    for s in secrets {
        assert!(!s.is_empty());
        assert!(
            !run.all().contains(s),
            "a secret was printed: {}",
            run.all()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exchange_show_refresh_revoke() {
    let emu = emulator().await;
    let app = emu.app();
    let base = emu.base_url();
    let dir = temp_dir("flow");
    let file = dir.join("tokens.json");
    let file_s = file.to_str().expect("utf-8 path").to_owned();
    let common = flags(&base, &app, &file_s);
    let code = consent(&emu).await;

    // exchange
    let mut args = vec![
        "exchange",
        "--code",
        &code,
        "--redirect-uri",
        &app.redirect_uri,
    ];
    args.extend(&common);
    let run = onair(&args, &[]).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(run.stdout.contains("saved generation 1"), "{}", run.stdout);
    let first = stored(&file);
    assert_eq!(first["format"], "onair.tokens");
    assert_eq!(first["generation"], 1);
    let (access1, refresh1) = (
        first["access_token"].as_str().expect("at").to_owned(),
        first["refresh_token"].as_str().expect("rt").to_owned(),
    );
    assert_no_secret(&run, &[&access1, &refresh1, &app.client_secret, &code]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "token file mode");
    }

    // show: scope, generation, times; no secret; needs no credentials
    let run = onair(&["show", "--tokens", &file_s], &[]).await;
    assert_eq!(run.code, 0, "{}", run.all());
    for want in [
        "generation:    1",
        "scope:",
        "chat.send",
        "access token:  expires 20",
        "(in 60 minutes)",
        "refresh due:",
        "(in 50 minutes)",
        "refresh token: expires",
        "(in 30 days)",
    ] {
        assert!(run.stdout.contains(want), "{want:?} in {}", run.stdout);
    }
    assert_no_secret(&run, &[&access1, &refresh1, &app.client_secret]);
    let json = onair(&["show", "--json", "--tokens", &file_s], &[]).await;
    assert_eq!(json.code, 0, "{}", json.all());
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("show --json");
    assert_eq!(v["generation"], 1);
    assert_eq!(v["accessExpired"], false);
    assert!(
        v["refreshDueAtMs"].as_u64().expect("due") < v["accessExpiresAtMs"].as_u64().expect("exp")
    );
    assert_no_secret(&json, &[&access1, &refresh1]);

    // refresh: generation 2, rotated; the old refresh token is refused
    let old = dir.join("old.json");
    std::fs::copy(&file, &old).expect("keep the old pair");
    let mut args = vec!["refresh"];
    args.extend(&common);
    let run = onair(&args, &[]).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(run.stdout.contains("generation 1 → 2"), "{}", run.stdout);
    let second = stored(&file);
    assert_eq!(second["generation"], 2);
    assert_ne!(second["refresh_token"].as_str(), Some(refresh1.as_str()));
    assert_ne!(second["access_token"].as_str(), Some(access1.as_str()));
    assert_no_secret(&run, &[&access1, &refresh1, &app.client_secret]);
    let old_s = old.to_str().expect("utf-8").to_owned();
    let mut stale_args = vec!["refresh"];
    stale_args.extend(flags(&base, &app, &old_s));
    let stale = onair(&stale_args, &[]).await;
    assert_eq!(stale.code, 1, "{}", stale.all());
    assert!(stale.stderr.contains("invalid_grant"), "{}", stale.stderr);
    assert!(
        stale.stderr.contains("advice: reauthorize"),
        "{}",
        stale.stderr
    );
    assert_no_secret(&stale, &[&refresh1, &app.client_secret]);

    // revoke: the file is gone; a refresh afterwards has nothing to refresh
    let mut args = vec!["revoke"];
    args.extend(&common);
    let run = onair(&args, &[]).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(!file.exists(), "the token file is deleted");
    let refreshed_access = second["access_token"].as_str().expect("at");
    let live = reqwest::Client::new()
        .get(format!("{base}/v1/live"))
        .bearer_auth(refreshed_access)
        .send()
        .await
        .expect("GET /v1/live");
    assert_eq!(live.status(), 401, "the access token is revoked too");
    let mut args = vec!["refresh"];
    args.extend(&common);
    let run = onair(&args, &[]).await;
    assert_eq!(run.code, 3, "{}", run.all());
    assert!(run.stderr.contains("no saved tokens"), "{}", run.stderr);

    emu.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_exchanged_twice_is_refused_with_invalid_grant() {
    let emu = emulator().await;
    let app = emu.app();
    let base = emu.base_url();
    let dir = temp_dir("twice");
    let code = consent(&emu).await;
    for (i, want) in [(1, 0), (2, 1)] {
        let file = dir.join(format!("t{i}.json"));
        let file_s = file.to_str().expect("utf-8").to_owned();
        let mut args = vec![
            "exchange",
            "--code",
            &code,
            "--redirect-uri",
            &app.redirect_uri,
        ];
        args.extend(flags(&base, &app, &file_s));
        let run = onair(&args, &[]).await;
        assert_eq!(run.code, want, "exchange #{i}: {}", run.all());
        if want == 1 {
            assert!(run.stderr.contains("kind: invalid_grant"), "{}", run.stderr);
            assert!(run.stderr.contains("advice: reauthorize"), "{}", run.stderr);
            assert!(run.stderr.contains("new consent code"), "{}", run.stderr);
            assert!(
                run.stderr
                    .contains(r#"the service said: "code already used""#),
                "error_description shown: {}",
                run.stderr
            );
            assert!(!file.exists(), "nothing saved on a refusal");
            assert_no_secret(&run, &[&code, &app.client_secret]);
        }
    }
    emu.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_from_the_environment_and_flags_win() {
    let emu = emulator().await;
    let app = emu.app();
    let base = emu.base_url();
    let dir = temp_dir("env");
    let file = dir.join("env-tokens.json");
    let file_s = file.to_str().expect("utf-8").to_owned();
    // A closed port: what the flags override.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let env = [
        ("ONAIR_BASE_URL", base.as_str()),
        ("ONAIR_CLIENT_ID", app.client_id.as_str()),
        ("ONAIR_CLIENT_SECRET", app.client_secret.as_str()),
        ("ONAIR_TOKENS", file_s.as_str()),
        ("ONAIR_REDIRECT_URI", app.redirect_uri.as_str()),
    ];

    // Everything from the environment.
    let code = consent(&emu).await;
    let run = onair(&["exchange", "--code", &code], &env).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(file.exists());
    let run = onair(&["show"], &env).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(run.stdout.contains(&file_s), "{}", run.stdout);
    assert_no_secret(&run, &[&app.client_secret]);

    // A flag beats its variable: the environment's base URL is dead.
    let mut dead_env = env;
    dead_env[0].1 = &dead;
    let run = onair(&["refresh"], &dead_env).await;
    assert_eq!(run.code, 4, "network failure: {}", run.all());
    assert!(run.stderr.contains("no answer"), "{}", run.stderr);
    assert_eq!(stored(&file)["generation"], 1, "nothing saved on a failure");
    let run = onair(&["refresh", "--base-url", &base], &dead_env).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert_eq!(stored(&file)["generation"], 2);

    // --tokens beats ONAIR_TOKENS.
    let other = dir.join("nothing-here.json");
    let run = onair(&["show", "--tokens", other.to_str().expect("utf-8")], &env).await;
    assert_eq!(run.code, 3, "{}", run.all());

    // A wrong secret: the service refuses the client; the secret is not echoed.
    let wrong = "not-the-secret-0123456789";
    let run = onair(&["refresh", "--client-secret", wrong], &env).await;
    assert_eq!(run.code, 1, "{}", run.all());
    assert!(
        run.stderr.contains("kind: invalid_client"),
        "{}",
        run.stderr
    );
    assert_no_secret(&run, &[wrong, &app.client_secret]);

    // Missing settings are usage errors.
    let run = onair(&["refresh", "--tokens", &file_s], &[]).await;
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(run.stderr.contains("--base-url"), "{}", run.stderr);
    let run = onair(&["exchange"], &env).await;
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(run.stderr.contains("--code"), "{}", run.stderr);

    // A new consent exchanged over a saved pair replaces it and continues
    // its generation (a reader of the file can tell it is newer).
    let code = consent(&emu).await;
    let run = onair(&["exchange", "--code", &code], &env).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(run.stdout.contains("saved generation 3"), "{}", run.stdout);
    assert!(
        run.stdout.contains("replacing generation 2"),
        "{}",
        run.stdout
    );

    let run = onair(&["revoke"], &env).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(!file.exists());
    emu.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_help_and_unreadable_files() {
    let help = onair(&["--help"], &[]).await;
    assert_eq!(help.code, 0);
    for want in [
        "exit codes",
        "0  done",
        "1  the service refused",
        "2  usage",
        "3  no saved tokens",
        "4  network",
    ] {
        assert!(help.stdout.contains(want), "{want:?} in {}", help.stdout);
    }
    let top = Command::new(env!("CARGO_BIN_EXE_onair"))
        .arg("--help")
        .output()
        .expect("onair --help");
    let top = String::from_utf8_lossy(&top.stdout);
    assert!(top.contains("auth exchange"), "{top}");
    assert!(top.contains("4 network failure"), "{top}");

    for args in [
        &[][..],
        &["rotate"],
        &["show", "--bogus"],
        &["show", "stray"],
        &["exchange", "--code"],
        &["show", "--code", "x"],
    ] {
        let run = onair(args, &[]).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.all());
    }
    // A secret passed where it does not belong is not quoted back.
    let run = onair(&["show", "s3cret-in-the-wrong-place"], &[]).await;
    assert_eq!(run.code, 2);
    assert!(!run.all().contains("s3cret"), "{}", run.all());

    let dir = temp_dir("bad");
    let missing = dir.join("none.json");
    let run = onair(&["show", "--tokens", missing.to_str().expect("utf-8")], &[]).await;
    assert_eq!(run.code, 3, "{}", run.all());
    let broken = dir.join("broken.json");
    std::fs::write(
        &broken,
        br#"{"format":"onair.tokens","version":1,"access_token":"SECRETX""#,
    )
    .expect("write");
    let run = onair(&["show", "--tokens", broken.to_str().expect("utf-8")], &[]).await;
    assert_eq!(run.code, 3, "{}", run.all());
    assert!(!run.all().contains("SECRETX"), "{}", run.all());
    let newer = dir.join("newer.json");
    std::fs::write(&newer, br#"{"format":"onair.tokens","version":9}"#).expect("write");
    let run = onair(&["show", "--tokens", newer.to_str().expect("utf-8")], &[]).await;
    assert_eq!(run.code, 3, "{}", run.all());
    assert!(run.stderr.contains("version 9"), "{}", run.stderr);

    // A refresh token past its lifetime: refused before anything is sent
    // (the base URL goes nowhere), the file left as it was.
    let expired = dir.join("expired.json");
    let json = br#"{"format":"onair.tokens","version":1,"generation":4,
        "access_token":"A","access_expires_at_ms":5000,"issued_at_ms":1000,
        "refresh_token":"R","refresh_expires_at_ms":90000,"scope":"chat.send"}"#;
    std::fs::write(&expired, json).expect("write");
    let expired_s = expired.to_str().expect("utf-8");
    let run = onair(&["show", "--tokens", expired_s], &[]).await;
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(
        run.stdout.contains("1970-01-01T00:00:05Z"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("ago) — expired"), "{}", run.stdout);
    let run = onair(
        &[
            "refresh",
            "--tokens",
            expired_s,
            "--base-url",
            "http://127.0.0.1:9",
            "--client-id",
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "--client-secret",
            "s",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.all());
    assert!(
        run.stderr.contains("refresh token expired"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(&expired).expect("kept"), json);
    let _ = std::fs::remove_dir_all(dir);
}
