//! `onair host`: a bad configuration is one line naming the key and exit 2,
//! and a secret put in the file is refused without being echoed.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

static RUN: AtomicUsize = AtomicUsize::new(0);

fn host(config: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("onair-cli-host-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("host.toml");
    std::fs::write(&path, config).expect("config");
    let mut command = Command::new(env!("CARGO_BIN_EXE_onair"));
    command.arg("host").arg("--config").arg(&path);
    for var in [
        "ONAIR_HOST_CLIENT_SECRET",
        "ONAIR_HOST_KEY",
        "ONAIR_HOST_ADMIN_TOKEN",
    ] {
        command.env_remove(var);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("onair host");
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const GOOD: &str = r#"[app]
base_url = "http://127.0.0.1:9"
client_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
consent_url = "http://127.0.0.1:9/oauth/authorize?client_id={client_id}&redirect_uri={redirect_uri}&state={state}"
"#;

const ENV: &[(&str, &str)] = &[
    ("ONAIR_HOST_CLIENT_SECRET", "cs_in_the_environment"),
    (
        "ONAIR_HOST_KEY",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    ),
    ("ONAIR_HOST_ADMIN_TOKEN", "an-admin-token-long-enough"),
];

#[test]
fn a_bad_configuration_names_its_key_and_exits_2() {
    let (code, err) = host(&GOOD.replace("{state}", ""), ENV);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("app.consent_url") && err.contains("{state}"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let (code, err) = host(&format!("{GOOD}[host]\nlisten = 8088\n"), ENV);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("host.listen"), "{err}");

    let (code, err) = host(GOOD, &ENV[1..]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ONAIR_HOST_CLIENT_SECRET"), "{err}");
}

#[test]
fn a_secret_in_the_file_is_refused_and_not_echoed() {
    let config = GOOD.replace(
        "[app]\n",
        "[app]\nclient_secret = \"cs_written_in_the_file\"\n",
    );
    let (code, err) = host(&config, ENV);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("app.client_secret"), "{err}");
    assert!(!err.contains("cs_written_in_the_file"), "{err}");
}
