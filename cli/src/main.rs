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
//! - `onair ctl COMMAND`: drives a running `onair serve` through its
//!   control API (streams, faults, events, the clock, the ledger).
//! - `onair host --config host.toml`: many DJs' bots in one service
//!   (`onair-host`: the consent flow, a store, a dashboard).
//!
//! Arguments are parsed by clap (`cli.rs`; the flags' values by
//! `values.rs`); a usage error is one line on stderr and exit 2, whichever
//! part of the command found it.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

mod auth;
mod cli;
mod ctl;
mod decode;
mod demo;
mod explain;
mod privacy;
mod record;
mod refbot;
mod serve;
mod values;

use cli::{Cli, Command};

fn main() -> ExitCode {
    cli::forget_empty_settings();
    let args: Vec<OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return cli::parse_failure(&e, &args),
    };
    let result = match cli.command {
        Command::Decode(args) => decode::run(&args),
        Command::Explain => explain::run(),
        Command::Serve(args) => serve::run(args),
        Command::Auth(args) => return auth::run(args),
        Command::Ctl(args) => return ctl::run(args),
        Command::Host(args) => return onair_host::main(&args.config),
        Command::Record(args) => match record::run(args) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Command::Demo(args) => match demo::run(args) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
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
