//! The command line itself: `--help` of every command (snapshots), usage
//! errors (exit 2, one line), and the rules kept from the hand parsers that
//! clap replaced (`--flag=value`, the last of a repeated flag wins, values
//! that start with `-`, empty `ONAIR_*` variables count as unset, secrets
//! never quoted back).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Every variable the command reads: cleared so the caller's environment
/// cannot leak into a test.
const VARS: [&str; 7] = [
    "ONAIR_BASE_URL",
    "ONAIR_CLIENT_ID",
    "ONAIR_CLIENT_SECRET",
    "ONAIR_TOKENS",
    "ONAIR_REDIRECT_URI",
    "ONAIR_CODE",
    "ONAIR_TALLY_OUT",
];

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_in(dir: Option<&PathBuf>, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_onair"));
    cmd.args(args).stdin(Stdio::null());
    for v in VARS {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let out: Output = cmd.output().expect("run onair");
    Run {
        code: out.status.code().expect("an exit code"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

fn onair(args: &[&str]) -> Run {
    run_in(None, args, &[])
}

fn help(args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.push("--help");
    let run = onair(&all);
    assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    assert!(run.stderr.is_empty(), "{args:?}: {}", run.stderr);
    run.stdout
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("onair-args-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A usage error: exit 2, nothing on stdout, one line on stderr.
#[track_caller]
fn usage_error(run: &Run) -> &str {
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    run.stderr.trim_end()
}

#[test]
fn help_of_the_command() {
    insta::assert_snapshot!("help", help(&[]));
    // `-h` and `help` say the same.
    let top = help(&[]);
    assert_eq!(onair(&["-h"]).stdout, top);
    assert_eq!(onair(&["help"]).stdout, top);
}

#[test]
fn help_of_each_command() {
    for command in ["decode", "explain", "demo", "serve", "auth"] {
        insta::assert_snapshot!(format!("help_{command}"), help(&[command]));
        assert_eq!(onair(&["help", command]).stdout, help(&[command]));
    }
    for chore in ["exchange", "refresh", "revoke", "show"] {
        insta::assert_snapshot!(format!("help_auth_{chore}"), help(&["auth", chore]));
    }
}

#[test]
fn a_bad_flag_exits_2_with_one_line() {
    let mut lines = Vec::new();
    for args in [
        &["--bogus"][..],
        &["decode", "--bogus"],
        &["explain", "--bogus"],
        &["demo", "--bogus"],
        &["serve", "--bogus"],
        &["auth", "--bogus"],
        &["auth", "exchange", "--bogus"],
        &["auth", "refresh", "--bogus"],
        &["auth", "revoke", "--bogus"],
        &["auth", "show", "--bogus"],
    ] {
        let run = onair(args);
        lines.push(format!("{} => {}", args.join(" "), usage_error(&run)));
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let mut lines = Vec::new();
    for args in [
        &[][..],
        &["nope"],
        &["decode", "--chunk"],
        &["decode", "--chunk", "0"],
        &["decode", "--chunk=x"],
        &["decode", "--max-frame-bytes", "-1"],
        &["decode", "stray"],
        &["decode", "--raw=yes"],
        &["explain", "stray"],
        &["serve", "--port", "65536"],
        &["serve", "--port", "--json"],
        &["serve", "--speed", "-1"],
        &["serve", "--speed", "inf"],
        &["serve", "--heartbeat-ms", "soon"],
        &["serve", "--scenario", "/no/such/file"],
        &["serve", "--on-air", "0"],
        &["serve", "--events-per-minute", "-1"],
        &["demo", "--speed", "0"],
        &["demo", "--remote"],
        &["demo", "--client-secret"],
        &["auth"],
        &["auth", "rotate"],
        &["auth", "exchange", "--code"],
        &["auth", "exchange", "--code="],
        &["auth", "exchange", "--code", ""],
        &["auth", "show", "--code", "x"],
        &["auth", "show", "--json=yes"],
        &["auth", "refresh", "--redirect-uri", "x"],
    ] {
        let run = onair(args);
        lines.push(format!("{} => {}", args.join(" "), usage_error(&run)));
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn arguments_that_may_be_secrets_are_never_quoted() {
    for args in [
        &["auth", "show", "s3cret-word"][..],
        &["auth", "s3cret-word"],
        &["auth", "show", "--x=s3cret-word"],
        &["auth", "show", "--tokens", "f", "s3cret-word"],
        &["demo", "s3cret-word"],
        &["demo", "--client-secret", "x", "s3cret-word"],
    ] {
        let run = onair(args);
        let line = usage_error(&run);
        assert!(!line.contains("s3cret"), "{args:?}: {line}");
    }
    // `--name=value`: the name is quoted, never the value.
    let run = onair(&["auth", "show", "--client-secrt=s3cret"]);
    let line = usage_error(&run);
    assert!(
        line.contains("\"--client-secrt\"") && !line.contains("s3cret"),
        "{line}"
    );
}

#[test]
fn flag_equals_value_and_the_last_of_a_repeated_flag() {
    let dir = temp_dir("forms");
    // `auth show` names the token file it could not find (exit 3).
    let show = |args: &[&str]| {
        let mut all = vec!["auth", "show"];
        all.extend(args);
        run_in(Some(&dir), &all, &[])
    };
    for (args, file) in [
        (&["--tokens=a.json"][..], "a.json"),
        (&["--tokens", "a.json", "--tokens", "b.json"], "b.json"),
        (&["--tokens=a.json", "--tokens=b.json"], "b.json"),
        (&["--tokens", "-dash.json"], "-dash.json"),
        (&["--tokens", "a.json", "--json", "--json"], "a.json"),
        (&[], "onair-tokens.json"),
    ] {
        let run = show(args);
        assert_eq!(run.code, 3, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("no saved tokens at {file}")),
            "{args:?}: {}",
            run.stderr
        );
    }
    // decode: `--chunk=N`, repeated `--raw` and `--chunk`.
    let whole = onair(&["decode"]);
    assert_eq!((whole.code, whole.stdout.as_str()), (0, ""));
    for args in [
        &["decode", "--chunk=3"][..],
        &["decode", "--raw", "--raw", "--chunk", "9", "--chunk", "1"],
        &["decode", "--max-frame-bytes=1024"],
    ] {
        let run = onair(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(run.stderr.is_empty());
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn settings_from_the_environment_and_empty_ones_count_as_unset() {
    let dir = temp_dir("env");
    // ONAIR_TOKENS names the file; empty, the default is used.
    let run = run_in(
        Some(&dir),
        &["auth", "show"],
        &[("ONAIR_TOKENS", "env.json")],
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("no saved tokens at env.json"),
        "{}",
        run.stderr
    );
    let run = run_in(Some(&dir), &["auth", "show"], &[("ONAIR_TOKENS", "")]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("no saved tokens at onair-tokens.json"),
        "{}",
        run.stderr
    );
    // A flag beats its variable.
    let run = run_in(
        Some(&dir),
        &["auth", "show", "--tokens", "flag.json"],
        &[("ONAIR_TOKENS", "env.json")],
    );
    assert!(
        run.stderr.contains("no saved tokens at flag.json"),
        "{}",
        run.stderr
    );
    // Empty settings are missing ones: a usage error naming the flag.
    let run = run_in(
        Some(&dir),
        &["auth", "exchange", "--code", "c", "--tokens", "t.json"],
        &[
            ("ONAIR_BASE_URL", ""),
            ("ONAIR_CLIENT_ID", ""),
            ("ONAIR_REDIRECT_URI", "http://127.0.0.1/callback"),
        ],
    );
    assert!(usage_error(&run).contains("needs --base-url (or ONAIR_BASE_URL)"));
    let run = run_in(
        Some(&dir),
        &["auth", "exchange", "--code", "c"],
        &[("ONAIR_REDIRECT_URI", "")],
    );
    assert!(usage_error(&run).contains("needs --redirect-uri (or ONAIR_REDIRECT_URI)"));
    // demo: a base URL from the environment means a deployment; every other
    // value may come from its variable, and an empty one is missing.
    let remote = [
        ("ONAIR_BASE_URL", "http://127.0.0.1:9"),
        ("ONAIR_CLIENT_ID", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
        ("ONAIR_CLIENT_SECRET", "s3cret"),
        ("ONAIR_CODE", ""),
        ("ONAIR_REDIRECT_URI", "http://127.0.0.1/callback"),
    ];
    let run = run_in(Some(&dir), &["demo"], &remote);
    let line = usage_error(&run);
    assert!(line.contains("needs --code"), "{line}");
    assert!(!line.contains("s3cret"), "{line}");
    let run = run_in(Some(&dir), &["demo", "--remote"], &[("ONAIR_BASE_URL", "")]);
    assert!(usage_error(&run).contains("needs --base-url"));
    // A value that starts with `-` is the flag's value.
    let run = run_in(
        Some(&dir),
        &["demo", "--base-url", "-x", "--client-id", "--client-secret"],
        &[],
    );
    assert!(usage_error(&run).contains("needs --client-secret"));
    let _ = std::fs::remove_dir_all(dir);
}

/// `onair --version` (and `-V`) prints the release's one version and exits 0:
/// what a user checks after `cargo install onair-cli`.
#[test]
fn version_is_the_workspace_version() {
    for flag in ["--version", "-V"] {
        let run = onair(&[flag]);
        assert_eq!(run.code, 0, "{flag}: {}", run.stderr);
        assert!(run.stderr.is_empty(), "{flag}: {}", run.stderr);
        assert_eq!(
            run.stdout,
            format!("onair {}\n", env!("CARGO_PKG_VERSION")),
            "{flag}"
        );
    }
}
