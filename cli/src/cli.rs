//! The command line, as clap derives: the subcommands, their flags, the
//! `ONAIR_*` variables that stand in for flags, and one-line usage errors.
//!
//! Rules kept from the hand parsers this replaced:
//! - a usage error is one line on stderr and exit 2;
//! - an option's value is the next argument whatever it looks like
//!   (`--code -x` is the code `-x`), or follows `=` (`--tokens=FILE`);
//! - a flag given twice: the last one wins;
//! - an `ONAIR_*` variable set to the empty string counts as unset;
//! - `auth` and `demo` take secrets, so their errors never quote an argument
//!   that is not a flag's name: a misplaced secret is not echoed.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Parser, Subcommand};

use crate::{auth, ctl, decode, demo, serve};

/// Every environment variable a flag may come from.
pub const SETTINGS: [&str; 12] = [
    "ONAIR_BASE_URL",
    "ONAIR_CLIENT_ID",
    "ONAIR_CLIENT_SECRET",
    "ONAIR_TOKENS",
    "ONAIR_REDIRECT_URI",
    "ONAIR_CODE",
    "ONAIR_TALLY_OUT",
    "ONAIR_TOKENS_FILE",
    "ONAIR_STATE_FILE",
    "ONAIR_ENDS_OUT",
    "ONAIR_WATCHDOG_MS",
    "ONAIR_EMULATOR",
];

const EXIT_CODES: &str = "\
Exit codes: 0 done; 2 a usage error (one line on stderr). `onair demo`: 1 when
the bot's tally differs from the emulator's ledger. `onair auth exchange |
refresh | revoke | show`: 1 the service refused (kind and advice printed),
3 no saved tokens / unreadable file, 4 network failure (`onair auth --help`).
`onair ctl`: 1 the emulator refused (its error text) or could not be reached.";

/// `onair`: tools for bot authors over the onair core. (No `Debug` here or
/// in the commands' arguments: they hold secrets.)
#[derive(Parser)]
#[command(
    name = "onair",
    bin_name = "onair",
    version,
    about = "Tools for bot authors of the live-broadcast bot API, over the onair core",
    after_help = EXIT_CODES,
    args_override_self = true
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Read a raw event stream on stdin; print one JSON object per item (NDJSON)
    Decode(decode::Args),
    /// Read {endpoint, status, headers, body, nowMs} as JSON on stdin; print its problem kind and advice
    #[command(
        after_help = "endpoint: token, revoke, live, listeners, fans, events or chat; headers and body \
                      optional\n(body a string); nowMs optional, needed for an HTTP-date Retry-After. \
                      Bad input: exit 2."
    )]
    Explain,
    /// The reference bot through a busy, faulty night on the emulator in-process, or against a deployment
    Demo(demo::Args),
    /// Run the service emulator on 127.0.0.1
    Serve(serve::Args),
    /// Drive a running `onair serve`: end or freeze streams, inject faults, emit events, read the ledger
    Ctl(ctl::Args),
    /// The token chores of your own bot: exchange, refresh, revoke, show
    Auth(auth::Args),
    /// Record a broadcast as a bot into a cassette (replay: `onair serve --replay`)
    Record(crate::record::Args),
    /// Many DJs' bots in one service: the consent flow, a store, a dashboard (onair-host)
    #[command(after_help = "\
The client secret, the token encryption key and the admin token come from
ONAIR_HOST_CLIENT_SECRET, ONAIR_HOST_KEY (32 bytes, base64) and
ONAIR_HOST_ADMIN_TOKEN, never from the file. A bad configuration: one line
naming the key, exit 2. SIGTERM or Ctrl-C stops it cleanly (exit 0).
Logs: ONAIR_HOST_LOG (a tracing filter, default info). Traces: OTLP/HTTP to
[host.traces] otlp_endpoint or OTEL_EXPORTER_OTLP_ENDPOINT, off by default.
See host/README.md.")]
    Host(HostArgs),
}

/// `onair host`'s options.
#[derive(clap::Args)]
pub struct HostArgs {
    /// The host's configuration (TOML)
    #[arg(long, value_name = "FILE", default_value = "host.toml")]
    pub config: std::path::PathBuf,
}

/// An `ONAIR_*` variable set to the empty string counts as unset, as a
/// missing one does (clap would take it as an empty value). Called first
/// thing in `main`, before any thread exists.
pub fn forget_empty_settings() {
    for name in SETTINGS {
        if std::env::var_os(name).is_some_and(|v| v.is_empty()) {
            std::env::remove_var(name);
        }
    }
}

/// What clap refused, as the command's one line on stderr and its exit
/// code: help (asked for) is printed as it is, exit 0; anything else exit 2.
pub fn parse_failure(e: &clap::Error, args: &[OsString]) -> ExitCode {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let word = |i: usize| args.get(i).and_then(|a| a.to_str());
    let command = word(1).filter(|c| {
        [
            "decode", "explain", "demo", "serve", "auth", "ctl", "record",
        ]
        .contains(c)
    });
    let line = match command {
        Some("auth") => {
            let sub = word(2).filter(|s| ["exchange", "refresh", "revoke", "show"].contains(s));
            let who = sub.map_or_else(|| "onair auth".to_owned(), |s| format!("onair auth {s}"));
            format!("{who}: {} (try `onair auth --help`)", message(e, true))
        }
        Some(c) => format!(
            "onair: {c}: {} (try `onair {c} --help`)",
            message(e, c == "demo" || c == "record")
        ),
        None => format!("onair: {} (try `onair --help`)", message(e, false)),
    };
    eprintln!("{line}");
    ExitCode::from(2)
}

/// One line for a usage error. With `secret_words`, no argument is quoted
/// unless it is a flag's name (it may be a misplaced secret).
fn message(e: &clap::Error, secret_words: bool) -> String {
    let text = |kind: ContextKind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    // `--code <C>` or `--tokens=FILE`: the flag's name alone.
    let flag = text(ContextKind::InvalidArg)
        .map(|a| a.split([' ', '=']).next().unwrap_or(a))
        .filter(|a| a.starts_with('-'));
    match (e.kind(), flag) {
        (ErrorKind::UnknownArgument, Some(name)) => format!("unknown option {name:?}"),
        (ErrorKind::InvalidValue, Some(name)) if text(ContextKind::InvalidValue) == Some("") => {
            format!("{name} needs a value")
        }
        (ErrorKind::TooManyValues, Some(name)) => format!("{name} takes no value"),
        (ErrorKind::InvalidUtf8, _) => "arguments must be UTF-8".to_owned(),
        (ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, _) => {
            if secret_words {
                "missing subcommand: exchange, refresh, revoke or show".to_owned()
            } else {
                "missing command".to_owned()
            }
        }
        _ if !secret_words => first_paragraph(e),
        (ErrorKind::UnknownArgument, None) => "unexpected argument".to_owned(),
        (ErrorKind::InvalidSubcommand, _) => {
            "unknown subcommand (exchange, refresh, revoke or show)".to_owned()
        }
        // From the parsers of flags that take no secret (`--speed`).
        (ErrorKind::InvalidValue | ErrorKind::ValueValidation, Some(_)) => first_paragraph(e),
        (kind, _) => kind.as_str().unwrap_or("bad arguments").to_owned(),
    }
}

/// clap's message without its usage and hints: `error: ` and the first
/// paragraph, on one line.
fn first_paragraph(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let paragraph: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let line = paragraph.join(" ");
    line.strip_prefix("error: ").unwrap_or(&line).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// Every `env = "ONAIR_…"` attribute is in [`SETTINGS`] (so an empty
    /// value counts as unset), and every name there is read by some flag.
    #[test]
    fn settings_name_every_variable() {
        fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                if let Some(name) = arg.get_env() {
                    out.push(name.to_string_lossy().into_owned());
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, out);
            }
        }
        let mut read = Vec::new();
        walk(&Cli::command(), &mut read);
        for name in &read {
            assert!(SETTINGS.contains(&name.as_str()), "{name}");
        }
        for name in SETTINGS {
            assert!(read.iter().any(|r| r == name), "{name}");
        }
    }
}
