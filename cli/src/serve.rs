//! `onair serve`: the service emulator on 127.0.0.1.
//!
//! `onair serve [--port N] [--speed X] [--scenario FILE|NAME] [--heartbeat-ms N] [--djs N]
//! [--on-air PCT] [--events-per-minute N] [--json]`
//!
//! With `--json` the first stdout line is exactly one JSON object
//! `{"baseUrl","controlUrl","clientId","clientSecret","redirectUri"}` and
//! nothing else is printed (a test harness that stops reading cannot block
//! the emulator). Without it: where it listens, the app's credentials, a
//! curl line for a consent code and the consent page's address, then one
//! readable line per thing that happens. Ctrl-C (or SIGTERM) stops it
//! cleanly. `--djs N` adds the DJs `dj-1` … `dj-N` beside `main` and plays
//! the scenario for each of them too (a hosted service's load); with
//! `--scenario fleet` they run as a fleet instead (`onair_emulator::fleet`:
//! each on air at its usual time of day, about `--on-air` % at a time,
//! `--events-per-minute` events each while on air).

use std::io::Write;

use onair_emulator::fleet::Fleet;
use onair_emulator::{Emulator, Scenario};
use serde_json::json;

use crate::UsageError;

/// `onair serve`'s options.
#[derive(Debug, clap::Args)]
#[command(after_help = "Ctrl-C or SIGTERM stops it cleanly (open streams are cut, exit 0).")]
pub struct Args {
    /// The port on 127.0.0.1 (0: an ephemeral one)
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = crate::values::port, allow_hyphen_values = true)]
    port: u16,
    /// Emulator time runs X times real time (0: frozen, moved only by the control API's clock/advance)
    #[arg(long, value_name = "X", default_value_t = 1.0,
          value_parser = crate::values::speed_or_frozen, allow_hyphen_values = true)]
    speed: f64,
    /// A scenario file, or a built-in one: quiet, busy, faulty, or fleet (the DJs of --djs on a daily schedule)
    #[arg(long, value_name = "FILE|NAME", allow_hyphen_values = true)]
    scenario: Option<String>,
    /// With --scenario fleet: the share of DJs on air at a time, 1 to 50 %
    #[arg(long, value_name = "PCT", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=50))]
    on_air: u32,
    /// With --scenario fleet: events per live DJ per emulator minute (0: none)
    #[arg(long, value_name = "N", default_value_t = 6.0, value_parser = events_per_minute,
          allow_hyphen_values = true)]
    events_per_minute: f64,
    /// The stream's heartbeat interval in emulator milliseconds [default: 15000]
    #[arg(long, value_name = "N", value_parser = crate::values::milliseconds,
          allow_hyphen_values = true)]
    heartbeat_ms: Option<i64>,
    /// N more DJs, dj-1 … dj-N, beside main; the scenario plays for each of them too
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = djs,
          allow_hyphen_values = true)]
    djs: usize,
    /// Print {baseUrl, controlUrl, clientId, clientSecret, redirectUri} as the first line, then nothing
    #[arg(long)]
    json: bool,
    /// Play a cassette of `onair record` to the bots (its times divided by --speed)
    #[arg(
        long,
        value_name = "CASSETTE",
        allow_hyphen_values = true,
        conflicts_with = "scenario"
    )]
    replay: Option<String>,
    /// With --replay: a request the cassette has no answer for fails the run (named on stderr, exit 1)
    #[arg(long, requires = "replay")]
    strict: bool,
}

/// What `onair serve` runs with, its scenario read.
struct Options {
    port: u16,
    speed: f64,
    scenario: Option<Scenario>,
    fleet: Option<Fleet>,
    heartbeat_ms: Option<i64>,
    djs: usize,
    json: bool,
    replay: Option<onair_emulator::cassette::Cassette>,
    strict: bool,
}

/// Most DJs `--djs` takes (each is a little state and, with a scenario, a
/// timeline of its own).
const MAX_DJS: usize = 100_000;

/// A number of DJs, 0 to [`MAX_DJS`].
fn djs(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n <= MAX_DJS => Ok(n),
        _ => Err(format!("takes 0..{MAX_DJS}")),
    }
}

/// Events a minute: a number from 0 to 60 000.
fn events_per_minute(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(n) if (0.0..=60_000.0).contains(&n) => Ok(n),
        _ => Err("takes a number from 0 to 60000".to_owned()),
    }
}

/// A built-in scenario's name, or a scenario file.
fn scenario(v: &str) -> Result<Scenario, UsageError> {
    if let Some(s) = Scenario::builtin(v) {
        return Ok(s);
    }
    let text = std::fs::read_to_string(v).map_err(|e| {
        UsageError(format!(
            "--scenario {v:?} is neither quiet, busy, faulty, fleet nor a readable file: {e}"
        ))
    })?;
    Scenario::from_json(&text).map_err(|e| UsageError(format!("{v}: {e}")))
}

/// A cassette file.
fn cassette(path: &str) -> Result<onair_emulator::cassette::Cassette, UsageError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| UsageError(format!("--replay {path:?}: {e}")))?;
    onair_emulator::cassette::Cassette::parse(&text).map_err(|e| UsageError(format!("{path}: {e}")))
}

/// Runs `onair serve` until Ctrl-C or SIGTERM.
pub fn run(args: Args) -> Result<(), UsageError> {
    let fleet = (args.scenario.as_deref() == Some("fleet")).then(|| Fleet {
        on_air_percent: args.on_air,
        events_per_minute: args.events_per_minute,
        ..Fleet::default()
    });
    let o = Options {
        port: args.port,
        speed: args.speed,
        scenario: match fleet {
            Some(_) => None,
            None => args.scenario.as_deref().map(scenario).transpose()?,
        },
        fleet,
        heartbeat_ms: args.heartbeat_ms,
        djs: args.djs,
        json: args.json,
        replay: args.replay.as_deref().map(cassette).transpose()?,
        strict: args.strict,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| UsageError(format!("cannot start the runtime: {e}")))?;
    rt.block_on(serve(o))
}

async fn serve(o: Options) -> Result<(), UsageError> {
    let scenario_name = match &o.fleet {
        Some(_) => Some("fleet".to_owned()),
        None => o.scenario.as_ref().map(|s| s.name.clone()),
    };
    let mut b = Emulator::builder().port(o.port).speed(o.speed).djs(o.djs);
    if let Some(s) = o.scenario {
        b = b.scenario(s);
    }
    if let Some(f) = o.fleet {
        b = b.fleet(f);
    }
    if let Some(h) = o.heartbeat_ms {
        b = b.heartbeat_ms(h);
    }
    let replaying = o.replay.is_some();
    if let Some(c) = o.replay {
        b = b.replay(c, o.strict);
    }
    let emu = b
        .start()
        .await
        .map_err(|e| UsageError(format!("cannot listen on 127.0.0.1:{}: {e}", o.port)))?;
    let app = emu.app();
    // Listen for the stop signals before saying where we are: a harness that
    // reads the line and signals at once must be heard, not kill us.
    let stop = stop_signal();
    tokio::pin!(stop);
    let mut out = std::io::stdout();
    if o.json {
        let line = json!({
            "baseUrl": emu.base_url(),
            "controlUrl": emu.control_url(),
            "clientId": app.client_id,
            "clientSecret": app.client_secret,
            "redirectUri": app.redirect_uri,
        });
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    } else {
        let scopes = "live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send";
        let _ = writeln!(
            out,
            "onair emulator on {} (speed {}x{}{})\n  control API:   {}\n  client id:     {}\n  client secret: {}\n  redirect uri:  {}\n\
             get a consent code:\n  curl -s -X POST {}/consent -d '{{\"scope\":\"{scopes}\"}}'\n\
             or through the consent page (302 to the redirect uri with the code):\n  {}/oauth/authorize?client_id={}&state=STATE\n\
             {}Ctrl-C stops.",
            emu.base_url(),
            o.speed,
            scenario_name.map(|n| format!(", scenario {n}")).unwrap_or_default(),
            if o.djs > 0 {
                format!(", DJs main and dj-1 … dj-{}", o.djs)
            } else {
                String::new()
            },
            emu.control_url(),
            app.client_id,
            app.client_secret,
            app.redirect_uri,
            emu.control_url(),
            emu.base_url(),
            app.client_id,
            if (o.speed - 1.0).abs() < f64::EPSILON {
                String::new()
            } else {
                format!(
                    "emulator time: a consent code lasts {}, an access token {}\n",
                    onair_emulator::clock::real_time(60_000, o.speed),
                    onair_emulator::clock::real_time(3_600_000, o.speed)
                )
            },
        );
        let _ = out.flush();
    }
    if o.json {
        // Nothing more on stdout: a harness that stops reading cannot block us.
        stop.await;
    } else {
        let mut log = emu.subscribe_log();
        loop {
            tokio::select! {
                () = &mut stop => break,
                line = log.recv() => match line {
                    Ok(line) => {
                        let t = onair_emulator::clock::iso(emu.now_ms());
                        let _ = writeln!(out, "{} {line}", t.get(11..23).unwrap_or(&t));
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        let _ = writeln!(out, "… {n} lines skipped");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
            }
        }
        let _ = writeln!(out, "stopping");
    }
    let unrecorded = emu.unrecorded();
    emu.shutdown().await;
    if replaying && o.strict && !unrecorded.is_empty() {
        for line in &unrecorded {
            eprintln!("onair serve --replay --strict: no recorded answer for {line}");
        }
        // The run failed: exit 1 (a usage error would be 2).
        std::process::exit(1);
    }
    Ok(())
}

/// Ctrl-C or SIGTERM. The handlers are installed when this is called, not
/// when the future is first polled (an `async fn` would install them late).
pub(crate) fn stop_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            match (term, int) {
                (Some(mut term), Some(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
