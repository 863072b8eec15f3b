//! The `onair` command: tools for bot authors over the onair core.
//!
//! - `onair decode [--raw] [--chunk N] [--max-frame-bytes N]`: a raw event
//!   stream on stdin, one JSON object per item on stdout (NDJSON).
//! - `onair explain`: one HTTP response as JSON on stdin, its classification
//!   (kind, advice, retry timing) as one JSON object on stdout.
//! - `onair demo`: the reference bot through a busy, faulty broadcast on the
//!   emulator in-process, checked against its ledger; or against a deployment.
//! - `onair serve [--port N] [--speed X] [--scenario FILE|NAME] [--json]`:
//!   the service emulator on 127.0.0.1 (see `onair-emulator`).
//! - `onair auth exchange | refresh | revoke | show`: the token chores of
//!   one's own bot (the core's token machine, a 0600 token file).

use std::process::ExitCode;

mod auth;
mod decode;
mod demo;
mod explain;
mod refbot;
mod serve;

const USAGE: &str = "usage: onair <command> [options]

commands:
  decode [--raw] [--chunk N] [--max-frame-bytes N]
      read a raw event stream on stdin; print one JSON object per item
  explain
      read {endpoint, status, headers, body, nowMs} as JSON on stdin;
      print the problem kind and advice as one JSON object
  demo [--speed X]
      the reference bot through a busy, faulty night on the emulator in-process;
      a summary per broadcast checked against the emulator's ledger (exit 1 if not equal)
  demo --base-url URL --client-id ID --client-secret S --code C --redirect-uri URI [--tally-out FILE]
      the same bot against a deployment (or `onair serve`) until Ctrl-C / SIGTERM;
      the values may come from ONAIR_BASE_URL, ONAIR_CLIENT_ID, … (then pass --remote)
  serve [--port N] [--speed X] [--scenario FILE|quiet|busy|faulty] [--heartbeat-ms N] [--json]
      run the service emulator on 127.0.0.1 (port 0: ephemeral); --json prints
      {baseUrl, controlUrl, clientId, clientSecret, redirectUri} as the first line
  auth exchange --code C --redirect-uri URI | refresh | revoke | show [--json]
      the token chores of your own bot: exchange a consent code and save the pair,
      refresh it, revoke it (and delete the file), show scope and expiry (never a secret);
      --base-url, --client-id, --client-secret, --tokens FILE (default onair-tokens.json)
      or ONAIR_BASE_URL, ONAIR_CLIENT_ID, ONAIR_CLIENT_SECRET, ONAIR_TOKENS;
      exit 0 ok, 1 the service refused (kind and advice printed), 2 usage error,
      3 no saved tokens / unreadable file, 4 network failure (`onair auth --help`)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        return usage_error("missing command");
    };
    let result = match command.as_str() {
        "decode" => decode::run(rest),
        "explain" => explain::run(rest),
        "serve" => serve::run(rest),
        "auth" => return auth::run(rest),
        "demo" => match demo::run(rest) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(UsageError(format!("unknown command {other:?}"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(UsageError(message)) => usage_error(&message),
    }
}

/// A mistake in how the command was called: exit 2 with one line.
#[derive(Debug)]
pub struct UsageError(pub String);

fn usage_error(message: &str) -> ExitCode {
    eprintln!("onair: {message} (try `onair --help`)");
    ExitCode::from(2)
}

/// Reads the value of a numeric option such as `--chunk 4096`.
pub fn number_arg(name: &str, value: Option<&String>) -> Result<usize, UsageError> {
    let value = value.ok_or_else(|| UsageError(format!("{name} needs a value")))?;
    match value.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(UsageError(format!(
            "{name} takes a positive whole number, not {value:?}"
        ))),
    }
}
