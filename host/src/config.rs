//! `host.toml` and the secrets from the environment. Every mistake is a
//! [`ConfigError`] that names the key (`app.consent_url`, `bot.kit.commands[0].name`,
//! `ONAIR_HOST_KEY`); `onair host` prints it and exits 2.
//!
//! ```toml
//! [app]
//! base_url = "https://api.example.test"          # the service's region
//! client_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
//! consent_url = "https://example.test/oauth/authorize?client_id={client_id}&redirect_uri={redirect_uri}&state={state}&scope={scope}"
//! scope = "live.read events.chat chat.send"     # default: every permission
//!
//! [host]
//! listen = "127.0.0.1:8088"                      # default
//! public_url = "https://bots.example.test"       # the redirect URI is <public_url>/callback
//! database = "host.db"                           # default; a path is a SQLite file next to this file
//! # ephemeral = true                             # allows an in-memory database (every DJ lost at a stop)
//! # header_timeout_ms = 10000, body_timeout_ms = 10000, request_timeout_ms = 60000,
//! # max_body_bytes = 16384, max_connections = <from the descriptor limit>,
//! # max_connections_per_client = 64, max_streams = <half the connections>,
//! # max_streams_per_client = 16, max_streams_per_session = 8   (crate::limits)
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use onair::kit::{KitConfig, RepliesConfig};
use onair::Permission;
use serde::Deserialize;
use zeroize::Zeroizing;

use crate::crypto::TokenCipher;
use crate::limits::Limits;

/// The service's heartbeat interval (spec: 15 s): a watchdog shorter than
/// this would replace healthy streams.
pub const HEARTBEAT_MS: u64 = 15_000;
/// The shortest listeners interval (`bot.listeners_every_ms`): each listing
/// counts in the app's daily quota.
pub const LISTENERS_FLOOR_MS: u64 = 5_000;
/// The longest start spread (`host.start_spread_ms`): an hour.
pub const SPREAD_CAP_MS: u64 = 3_600_000;
/// The default probe budget (`host.probe_budget_per_s`): off-air probes per
/// second for the whole app, all replicas together.
pub const PROBE_BUDGET_DEFAULT: u32 = 200;
/// The largest probe budget: the service's per-second quota is the app's
/// for every call, and probing is the least of them.
pub const PROBE_BUDGET_CAP: u32 = 10_000;
/// The shortest admin token, after trimming.
pub const ADMIN_TOKEN_CHARS: usize = 16;

/// The client secret's variable.
pub const ENV_CLIENT_SECRET: &str = "ONAIR_HOST_CLIENT_SECRET";
/// The token encryption key's variable (32 bytes, base64).
pub const ENV_KEY: &str = "ONAIR_HOST_KEY";
/// The admin token's variable.
pub const ENV_ADMIN_TOKEN: &str = "ONAIR_HOST_ADMIN_TOKEN";
/// The database URL's variable (wins over `host.database`; a PostgreSQL
/// password belongs here, not in the file).
pub const ENV_DATABASE: &str = "ONAIR_HOST_DATABASE";

/// A configuration mistake: the key (or variable) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The key, dotted (`app.client_id`), or the environment variable.
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    fn at(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    app: AppFile,
    #[serde(default)]
    host: HostFile,
    #[serde(default)]
    bot: BotFile,
    /// Per-bot overrides, by the host's bot id.
    #[serde(default)]
    dj: BTreeMap<String, DjFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppFile {
    base_url: String,
    client_id: String,
    consent_url: String,
    scope: Option<String>,
    /// Refused with a pointer to the variable (never in the file).
    client_secret: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostFile {
    listen: Option<String>,
    public_url: Option<String>,
    database: Option<String>,
    start_spread_ms: Option<u64>,
    seed: Option<u64>,
    events_per_broadcast: Option<u32>,
    admin_token: Option<toml::Value>,
    key: Option<toml::Value>,
    ephemeral: Option<bool>,
    header_timeout_ms: Option<u64>,
    body_timeout_ms: Option<u64>,
    request_timeout_ms: Option<u64>,
    max_body_bytes: Option<u64>,
    max_connections: Option<u64>,
    max_connections_per_client: Option<u64>,
    max_streams: Option<u64>,
    probe_budget_per_s: Option<u32>,
    max_streams_per_client: Option<u64>,
    max_streams_per_session: Option<u64>,
    #[serde(default)]
    traces: TracesFile,
}

/// `[host.traces]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TracesFile {
    otlp_endpoint: Option<String>,
    sample_ratio: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BotFile {
    watchdog_ms: Option<u64>,
    listeners_every_ms: Option<u64>,
    kit: Option<toml::Value>,
    #[serde(default)]
    replies: RepliesFile,
}

/// `[bot.replies]` / `[dj.N.replies]` as written: each key set replaces
/// the one below it (the core's default, then `[bot.replies]`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepliesFile {
    welcome: Option<String>,
    welcome_back: Option<String>,
    thanks: Option<String>,
    hearts: Option<String>,
    donated: Option<String>,
    no_donors: Option<String>,
    welcome_many: Option<String>,
    welcome_back_many: Option<String>,
    thanks_many: Option<String>,
    #[serde(rename = "and")]
    and: Option<String>,
    #[serde(default)]
    commands: BTreeMap<String, String>,
    #[serde(default)]
    fresh_ms: FreshFile,
}

/// `[bot.replies.fresh_ms]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FreshFile {
    welcome: Option<u64>,
    welcome_back: Option<u64>,
    thanks: Option<u64>,
    milestone: Option<u64>,
    command: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DjFile {
    kit: Option<toml::Value>,
    #[serde(default)]
    replies: RepliesFile,
}

/// `replies` with what `file` sets over it.
fn replies_with(replies: &RepliesConfig, file: &RepliesFile) -> RepliesConfig {
    fn set<T: Clone>(slot: &mut T, value: Option<&T>) {
        if let Some(v) = value {
            slot.clone_from(v);
        }
    }
    let mut r = replies.clone();
    set(&mut r.welcome, file.welcome.as_ref());
    set(&mut r.welcome_back, file.welcome_back.as_ref());
    set(&mut r.thanks, file.thanks.as_ref());
    set(&mut r.hearts, file.hearts.as_ref());
    set(&mut r.donated, file.donated.as_ref());
    set(&mut r.no_donors, file.no_donors.as_ref());
    set(&mut r.and, file.and.as_ref());
    for (slot, value) in [
        (&mut r.welcome_many, &file.welcome_many),
        (&mut r.welcome_back_many, &file.welcome_back_many),
        (&mut r.thanks_many, &file.thanks_many),
    ] {
        if value.is_some() {
            slot.clone_from(value);
        }
    }
    for (name, text) in &file.commands {
        r.commands.insert(name.clone(), text.clone());
    }
    let f = &file.fresh_ms;
    set(&mut r.fresh_ms.welcome, f.welcome.as_ref());
    set(&mut r.fresh_ms.welcome_back, f.welcome_back.as_ref());
    set(&mut r.fresh_ms.thanks, f.thanks.as_ref());
    set(&mut r.fresh_ms.milestone, f.milestone.as_ref());
    set(&mut r.fresh_ms.command, f.command.as_ref());
    r
}

/// One bot's behaviour: the kit, its replies (`[bot.replies]` and the
/// bot's `[dj.N.replies]`) in it, always set: the core greets, thanks,
/// calls milestones and answers the configured commands.
#[derive(Debug, Clone, PartialEq)]
pub struct Behaviour {
    /// The kit (commands, greetings, milestones, the tally, the replies).
    pub kit: KitConfig,
}

impl Behaviour {
    /// The replies the bot says (the kit's).
    pub fn replies(&self) -> Option<&RepliesConfig> {
        self.kit.replies.as_ref()
    }
}

/// A secret from the environment: zeroized on drop, never shown.
#[derive(Clone)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// The value (to hand to the core's credentials or compare).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The whole configuration, checked.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The service's base address.
    pub base_url: String,
    /// The app's client id.
    pub client_id: String,
    /// The app's client secret ([`ENV_CLIENT_SECRET`]).
    pub client_secret: Secret,
    /// The consent page, with `{client_id}`, `{redirect_uri}`, `{state}`, `{scope}`.
    pub consent_url: String,
    /// The permissions asked for at consent.
    pub scope: String,
    /// Where the web side listens.
    pub listen: SocketAddr,
    /// The host's address as DJs' browsers reach it (no trailing slash).
    pub public_url: String,
    /// The sqlx database URL (a secret: it may hold a password).
    pub database_url: Secret,
    /// A starting replica spreads its bots' first connects over this long
    /// at least (ms): each in a slot of its own, `start_spread_ms ÷ bots`
    /// apart or, when the probe budget's pace needs more, `bots ÷ pace`
    /// seconds in all (see `crate::probe::start_spacing_ms`).
    pub start_spread_ms: u64,
    /// Seeds the bots' backoff (random when not set).
    pub seed: Option<u64>,
    /// Events kept per broadcast per bot in the log.
    pub events_per_broadcast: u32,
    /// Off-air probes (`GET /v1/live/events` finding no broadcast) per
    /// second the app's bots may send, all replicas together (each replica
    /// spends its share: the budget divided by the live replicas).
    pub probe_budget_per_s: u32,
    /// The stream's heartbeat watchdog, when not the core's default.
    pub watchdog_ms: Option<u64>,
    /// Optional: while on air, each bot lists the broadcast's listeners this
    /// often (service time, ms; `listeners.read`, counted in the app's daily
    /// quota); the dashboard shows how many.
    pub listeners_every_ms: Option<u64>,
    /// Every bot's behaviour unless overridden.
    pub behaviour: Behaviour,
    /// Overrides by bot id.
    pub overrides: BTreeMap<i64, Behaviour>,
    /// The admin token ([`ENV_ADMIN_TOKEN`]), trimmed.
    pub admin_token: Secret,
    /// Seals tokens at rest ([`ENV_KEY`]).
    pub cipher: TokenCipher,
    /// The web side's timeouts and caps.
    pub limits: Limits,
    /// Where the bots' spans are exported (`[host.traces]`, else
    /// [`ENV_OTLP_ENDPOINT`](crate::traces::ENV_OTLP_ENDPOINT)); `None`:
    /// no traces.
    pub traces: Option<crate::traces::TracesConfig>,
}

impl HostConfig {
    /// The redirect URI the consent sends DJs back to.
    pub fn redirect_uri(&self) -> String {
        format!("{}/callback", self.public_url)
    }

    /// The behaviour of bot `id`.
    pub fn behaviour(&self, id: i64) -> &Behaviour {
        self.overrides.get(&id).unwrap_or(&self.behaviour)
    }

    /// The consent page for `state`: the template with every placeholder
    /// filled in, percent-encoded.
    pub fn consent_url_for(&self, state: &str) -> String {
        let enc = |v: &str| form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>();
        self.consent_url
            .replace("{client_id}", &enc(&self.client_id))
            .replace("{redirect_uri}", &enc(&self.redirect_uri()))
            .replace("{state}", &enc(state))
            .replace("{scope}", &enc(&self.scope))
    }

    /// Reads `path` and the environment.
    pub fn load(path: &Path) -> Result<HostConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::at("", format!("cannot read {}: {e}", path.display())))?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Self::parse(&text, dir, &|name| std::env::var(name).ok())
    }

    /// Parses `text` (relative paths from `dir`), the secrets from `env`.
    pub fn parse(
        text: &str,
        dir: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<HostConfig, ConfigError> {
        let de = toml::Deserializer::parse(text).map_err(|e| toml_error(&e))?;
        let file: File = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let message = toml_message(&e.into_inner());
            ConfigError::at(if key == "." { String::new() } else { key }, message)
        })?;
        let never_in_file = |present: bool, key: &str, var: &str| {
            if present {
                Err(ConfigError::at(
                    key,
                    format!("a secret is never read from the file: set {var} in the environment"),
                ))
            } else {
                Ok(())
            }
        };
        never_in_file(
            file.app.client_secret.is_some(),
            "app.client_secret",
            ENV_CLIENT_SECRET,
        )?;
        never_in_file(
            file.host.admin_token.is_some(),
            "host.admin_token",
            ENV_ADMIN_TOKEN,
        )?;
        never_in_file(file.host.key.is_some(), "host.key", ENV_KEY)?;

        let app = file.app;
        onair::BaseUrl::new(&app.base_url)
            .map_err(|e| ConfigError::at("app.base_url", e.to_string()))?;
        let base_url = app.base_url.trim_end_matches('/').to_owned();
        let client_secret = Secret(Zeroizing::new(
            env(ENV_CLIENT_SECRET)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    ConfigError::at(ENV_CLIENT_SECRET, "not set: the app's client secret")
                })?,
        ));
        onair::ClientCredentials::new(&app.client_id, client_secret.expose().to_owned())
            .map_err(|e| ConfigError::at("app.client_id", e.to_string()))?;
        for needed in ["{client_id}", "{redirect_uri}", "{state}"] {
            if !app.consent_url.contains(needed) {
                return Err(ConfigError::at(
                    "app.consent_url",
                    format!("has no {needed} placeholder"),
                ));
            }
        }
        if !(app.consent_url.starts_with("http://") || app.consent_url.starts_with("https://")) {
            return Err(ConfigError::at("app.consent_url", "not an http(s) URL"));
        }
        let scope = match app.scope {
            Some(scope) => {
                let words: Vec<&str> = scope.split_whitespace().collect();
                if words.is_empty() {
                    return Err(ConfigError::at("app.scope", "names no permission"));
                }
                for w in &words {
                    if !Permission::KNOWN.iter().any(|p| p.as_str() == *w) {
                        return Err(ConfigError::at(
                            "app.scope",
                            format!("unknown permission {w:?}"),
                        ));
                    }
                }
                words.join(" ")
            }
            None => Permission::KNOWN
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        };

        let host = file.host;
        let limits = limits(&host)?;
        let traces = traces(&host.traces, env)?;
        let listen_text = host.listen.unwrap_or_else(|| "127.0.0.1:8088".to_owned());
        let listen: SocketAddr = listen_text
            .parse()
            .map_err(|_| ConfigError::at("host.listen", "not an address:port"))?;
        let public_url = host
            .public_url
            .unwrap_or_else(|| format!("http://{listen}"))
            .trim_end_matches('/')
            .to_owned();
        if !(public_url.starts_with("http://") || public_url.starts_with("https://")) {
            return Err(ConfigError::at("host.public_url", "not an http(s) URL"));
        }
        if let Some(url) = host.database.as_deref() {
            if url_has_password(url) {
                return Err(ConfigError::at(
                    "host.database",
                    format!("a password in the file: set {ENV_DATABASE} instead"),
                ));
            }
        }
        let database_url = match env(ENV_DATABASE).filter(|u| !u.is_empty()) {
            Some(url) => database_url(Some(&url), dir).map_err(|e| ConfigError {
                key: ENV_DATABASE.to_owned(),
                ..e
            })?,
            None => database_url(host.database.as_deref(), dir)?,
        };
        if is_in_memory(&database_url) && host.ephemeral != Some(true) {
            return Err(ConfigError::at(
                "host.database",
                "an in-memory database loses every DJ at a stop: set host.ephemeral = true to mean it",
            ));
        }
        let database_url = Secret(Zeroizing::new(database_url));
        let start_spread_ms = host.start_spread_ms.unwrap_or(5_000);
        if start_spread_ms > SPREAD_CAP_MS {
            return Err(ConfigError::at(
                "host.start_spread_ms",
                format!("at most {SPREAD_CAP_MS} (an hour)"),
            ));
        }
        let probe_budget_per_s = host.probe_budget_per_s.unwrap_or(PROBE_BUDGET_DEFAULT);
        if !(1..=PROBE_BUDGET_CAP).contains(&probe_budget_per_s) {
            return Err(ConfigError::at(
                "host.probe_budget_per_s",
                format!("from 1 to {PROBE_BUDGET_CAP} probes a second"),
            ));
        }
        let events_per_broadcast = host.events_per_broadcast.unwrap_or(200);
        if events_per_broadcast == 0 {
            return Err(ConfigError::at(
                "host.events_per_broadcast",
                "must be at least 1",
            ));
        }

        // Trimmed as the login form and the bearer header are.
        let admin = env(ENV_ADMIN_TOKEN)
            .map(|t| t.trim().to_owned())
            .unwrap_or_default();
        if admin.chars().count() < ADMIN_TOKEN_CHARS {
            return Err(ConfigError::at(
                ENV_ADMIN_TOKEN,
                format!(
                    "not set or shorter than {ADMIN_TOKEN_CHARS} characters (spaces around it not counted): the admin token"
                ),
            ));
        }
        let key = Zeroizing::new(env(ENV_KEY).unwrap_or_default());
        let cipher = TokenCipher::from_base64(&key).map_err(|e| ConfigError::at(ENV_KEY, e))?;

        let bot = file.bot;
        if bot.watchdog_ms.is_some_and(|ms| ms < HEARTBEAT_MS) {
            return Err(ConfigError::at(
                "bot.watchdog_ms",
                format!(
                    "at least {HEARTBEAT_MS}: below the service's heartbeat interval (15 s) it replaces healthy streams"
                ),
            ));
        }
        if bot
            .listeners_every_ms
            .is_some_and(|ms| ms < LISTENERS_FLOOR_MS)
        {
            return Err(ConfigError::at(
                "bot.listeners_every_ms",
                format!(
                    "at least {LISTENERS_FLOOR_MS}: each listing counts in the app's daily quota (leave it out for none)"
                ),
            ));
        }
        let kit = kit_config(bot.kit.as_ref(), "bot.kit")?.unwrap_or_default();
        let replies = replies_with(&RepliesConfig::default(), &bot.replies);
        let behaviour = behaviour_of(kit, replies.clone(), "bot.kit", "bot.replies")?;
        let mut overrides = BTreeMap::new();
        for (name, dj) in &file.dj {
            let key = format!("dj.{name}");
            let id: i64 = name.parse().ok().filter(|id| *id > 0).ok_or_else(|| {
                ConfigError::at(&key, "not a bot id (the number on the dashboard)")
            })?;
            let kit_key = format!("{key}.kit");
            let kit = match kit_config(dj.kit.as_ref(), &kit_key)? {
                Some(kit) => kit,
                None => KitConfig {
                    replies: None,
                    ..behaviour.kit.clone()
                },
            };
            let dj_replies = replies_with(&replies, &dj.replies);
            let dj_behaviour = behaviour_of(kit, dj_replies, &kit_key, &format!("{key}.replies"))?;
            overrides.insert(id, dj_behaviour);
        }

        Ok(HostConfig {
            base_url,
            client_id: app.client_id,
            client_secret,
            consent_url: app.consent_url,
            scope,
            listen,
            public_url,
            database_url,
            start_spread_ms,
            seed: host.seed,
            events_per_broadcast,
            probe_budget_per_s,
            watchdog_ms: bot.watchdog_ms,
            listeners_every_ms: bot.listeners_every_ms,
            behaviour,
            overrides,
            admin_token: Secret(Zeroizing::new(admin)),
            cipher,
            limits,
            traces,
        })
    }
}

/// `[host.traces]`, the endpoint else from the environment's standard
/// variable; `None` without either.
fn traces(
    file: &TracesFile,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<crate::traces::TracesConfig>, ConfigError> {
    use crate::traces::ENV_OTLP_ENDPOINT;
    let (endpoint, key) = match file.otlp_endpoint.clone() {
        Some(url) => (url, "host.traces.otlp_endpoint"),
        None => match env(ENV_OTLP_ENDPOINT).filter(|u| !u.trim().is_empty()) {
            Some(url) => (url, ENV_OTLP_ENDPOINT),
            None => {
                if file.sample_ratio.is_some() {
                    return Err(ConfigError::at(
                        "host.traces.sample_ratio",
                        format!("traces go nowhere: set host.traces.otlp_endpoint or {ENV_OTLP_ENDPOINT}"),
                    ));
                }
                return Ok(None);
            }
        },
    };
    let endpoint = endpoint.trim().to_owned();
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(ConfigError::at(
            key,
            "not an http(s) URL (the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318)",
        ));
    }
    let sample_ratio = file.sample_ratio.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&sample_ratio) {
        return Err(ConfigError::at(
            "host.traces.sample_ratio",
            "between 0 and 1",
        ));
    }
    Ok(Some(crate::traces::TracesConfig {
        otlp_endpoint: endpoint,
        sample_ratio,
    }))
}

/// `[host]`'s timeouts and caps, each within its bounds.
fn limits(host: &HostFile) -> Result<Limits, ConfigError> {
    let defaults = Limits::default();
    let ms = |value: Option<u64>, key: &str, default: std::time::Duration| match value {
        None => Ok(default),
        Some(ms) if (1..=600_000).contains(&ms) => Ok(std::time::Duration::from_millis(ms)),
        Some(_) => Err(ConfigError::at(
            format!("host.{key}"),
            "between 1 and 600000 (ten minutes)",
        )),
    };
    let count = |value: Option<u64>, key: &str, max: u64| match value {
        None => Ok(None),
        Some(n) if (1..=max).contains(&n) => Ok(usize::try_from(n).ok()),
        Some(_) => Err(ConfigError::at(
            format!("host.{key}"),
            format!("between 1 and {max}"),
        )),
    };
    const MANY: u64 = 1_000_000;
    Ok(Limits {
        header_timeout: ms(
            host.header_timeout_ms,
            "header_timeout_ms",
            defaults.header_timeout,
        )?,
        body_timeout: ms(
            host.body_timeout_ms,
            "body_timeout_ms",
            defaults.body_timeout,
        )?,
        request_timeout: ms(
            host.request_timeout_ms,
            "request_timeout_ms",
            defaults.request_timeout,
        )?,
        max_body_bytes: count(host.max_body_bytes, "max_body_bytes", 16 * 1024 * 1024)?
            .unwrap_or(defaults.max_body_bytes),
        max_connections: count(host.max_connections, "max_connections", MANY)?,
        max_connections_per_client: count(
            host.max_connections_per_client,
            "max_connections_per_client",
            MANY,
        )?
        .unwrap_or(defaults.max_connections_per_client),
        max_streams: count(host.max_streams, "max_streams", MANY)?,
        max_streams_per_client: count(host.max_streams_per_client, "max_streams_per_client", MANY)?
            .unwrap_or(defaults.max_streams_per_client),
        max_streams_per_session: count(
            host.max_streams_per_session,
            "max_streams_per_session",
            MANY,
        )?
        .unwrap_or(defaults.max_streams_per_session),
    })
}

/// A SQLite database in memory (`sqlite::memory:`, `:memory:`, `mode=memory`).
fn is_in_memory(url: &str) -> bool {
    url.starts_with("sqlite:") && (url.contains(":memory:") || url.contains("mode=memory"))
}

/// `postgres://user:password@…`: a password in the URL.
fn url_has_password(url: &str) -> bool {
    url.split_once("://")
        .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
        .and_then(|authority| authority.rsplit_once('@'))
        .is_some_and(|(user, _)| user.contains(':'))
}

/// The sqlx URL: `sqlite:`, `postgres:` and `postgresql:` URLs as given, a
/// path as a SQLite file (relative to the config's folder), default
/// `host.db` there.
fn database_url(given: Option<&str>, dir: &Path) -> Result<String, ConfigError> {
    let given = given.unwrap_or("host.db");
    if given.starts_with("sqlite:")
        || given.starts_with("postgres://")
        || given.starts_with("postgresql://")
    {
        return Ok(given.to_owned());
    }
    if given.contains("://") {
        return Err(ConfigError::at(
            "host.database",
            "a file path, a sqlite: URL or a postgres:// URL",
        ));
    }
    let path = PathBuf::from(given);
    let path = if path.is_absolute() {
        path
    } else {
        dir.join(path)
    };
    Ok(format!("sqlite://{}?mode=rwc", path.display()))
}

/// `[bot.kit]` (TOML, the core's keys) through the core's own checks.
fn kit_config(value: Option<&toml::Value>, key: &str) -> Result<Option<KitConfig>, ConfigError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let json = serde_json::to_string(value).map_err(|e| ConfigError::at(key, e.to_string()))?;
    KitConfig::from_json(&json).map(Some).map_err(|e| {
        let inner = e.key.trim_start_matches('.');
        let full = if inner.is_empty() {
            key.to_owned()
        } else {
            format!("{key}.{inner}")
        };
        ConfigError::at(full, e.message)
    })
}

/// The kit with `replies` in it, checked by the core; a mistake in the
/// replies names its key under `replies_key` (`bot.replies.commands.bye`).
fn behaviour_of(
    mut kit: KitConfig,
    replies: RepliesConfig,
    kit_key: &str,
    replies_key: &str,
) -> Result<Behaviour, ConfigError> {
    if kit.replies.is_some() {
        return Err(ConfigError::at(
            format!("{kit_key}.replies"),
            format!("the replies are written in [{replies_key}]"),
        ));
    }
    kit.replies = Some(replies);
    kit.validate().map_err(|e| {
        let full = match e.key.strip_prefix("replies") {
            Some(rest) if rest.is_empty() || rest.starts_with('.') => {
                format!("{replies_key}{rest}")
            }
            _ if e.key.is_empty() => kit_key.to_owned(),
            _ => format!("{kit_key}.{}", e.key),
        };
        ConfigError::at(full, e.message)
    })?;
    Ok(Behaviour { kit })
}

fn toml_message(e: &toml::de::Error) -> String {
    e.message().to_owned()
}

fn toml_error(e: &toml::de::Error) -> ConfigError {
    let at = e
        .span()
        .map(|s| format!(" (at byte {})", s.start))
        .unwrap_or_default();
    ConfigError::at("", format!("not valid TOML: {}{at}", e.message()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    fn env(name: &str) -> Option<String> {
        match name {
            ENV_CLIENT_SECRET => Some("s3cret-value".to_owned()),
            ENV_ADMIN_TOKEN => Some("admin-token-0123456789".to_owned()),
            ENV_KEY => Some(KEY.to_owned()),
            _ => None,
        }
    }

    const GOOD: &str = r#"
[app]
base_url = "http://127.0.0.1:9000"
client_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
consent_url = "http://127.0.0.1:9000/oauth/authorize?client_id={client_id}&redirect_uri={redirect_uri}&state={state}&scope={scope}"

[host]
listen = "127.0.0.1:8090"

[bot.kit]
tally = true
[[bot.kit.commands]]
name = "hello"
[bot.replies.commands]
hello = "Hello, {nickname}!"

[dj.7.replies]
welcome = "Hi {nickname}"
"#;

    fn parse(text: &str) -> Result<HostConfig, ConfigError> {
        HostConfig::parse(text, Path::new("/etc/onair"), &env)
    }

    #[test]
    fn a_good_file_with_defaults_and_an_override() {
        let c = parse(GOOD).unwrap();
        assert_eq!(c.public_url, "http://127.0.0.1:8090");
        assert_eq!(c.redirect_uri(), "http://127.0.0.1:8090/callback");
        assert_eq!(
            c.database_url.expose(),
            "sqlite:///etc/onair/host.db?mode=rwc"
        );
        assert!(
            !format!("{c:?}").contains("host.db"),
            "the URL is not shown"
        );
        assert!(c.behaviour.kit.tally);
        let replies = |id: i64| c.behaviour(id).replies().cloned().unwrap();
        assert_eq!(replies(7).welcome, "Hi {nickname}");
        assert_eq!(c.behaviour(7).kit.commands, c.behaviour.kit.commands);
        assert_eq!(replies(7).commands, replies(8).commands);
        assert_eq!(replies(8).welcome, "Welcome, {nickname}! 🎧");
        // Every other key is the core's default.
        let mut expected = RepliesConfig::default();
        expected
            .commands
            .insert("hello".into(), "Hello, {nickname}!".into());
        assert_eq!(replies(8), expected);
        assert_eq!(c.scope.split(' ').count(), Permission::KNOWN.len());
        let url = c.consent_url_for("a b/c");
        assert!(url.contains("state=a+b%2Fc"), "{url}");
        assert!(url.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A8090%2Fcallback"));
    }

    #[test]
    fn each_mistake_names_its_key() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "client_id = \"3f2504e0-4f89-11d3-9a0c-0305e82c3301\"",
                "client_id = \"nope\"",
                "app.client_id",
            ),
            ("{state}", "", "app.consent_url"),
            (
                "listen = \"127.0.0.1:8090\"",
                "listen = \"here\"",
                "host.listen",
            ),
            ("listen = \"127.0.0.1:8090\"", "listen = 5", "host.listen"),
            ("listen = \"127.0.0.1:8090\"", "colour = 1", "host.colour"),
            (
                "name = \"hello\"",
                "name = \"hello\"\nallowed = \"admins\"",
                "bot.kit.commands[0].allowed",
            ),
            (
                "hello = \"Hello",
                "bye = \"Hello",
                "bot.replies.commands.bye",
            ),
            ("[dj.7.replies]", "[dj.seven.replies]", "dj.seven"),
            (
                "welcome = \"Hi {nickname}\"",
                "welcome = \"Hi {nick}\"",
                "dj.7.replies.welcome",
            ),
            (
                "welcome = \"Hi {nickname}\"",
                "commands = { bye = \"Bye\" }",
                "dj.7.replies.commands.bye",
            ),
            (
                "[dj.7.replies]",
                "[bot.replies.fresh_ms]\nwelcome = 0\n[dj.7.replies]",
                "bot.replies.fresh_ms.welcome",
            ),
            (
                "[dj.7.replies]",
                "[bot.replies.fresh_ms]\nmerged = 5\n[dj.7.replies]",
                "merged",
            ),
            (
                "[bot.replies.commands]",
                "[bot.replies]\nthanks_many = \"Thanks {top}\"\n[bot.replies.commands]",
                "bot.replies.thanks_many",
            ),
            (
                "[bot.replies.commands]",
                "[bot.replies]\nand = \"{x}\"\n[bot.replies.commands]",
                "bot.replies.and",
            ),
            (
                "tally = true",
                "tally = true\nreplies = {}",
                "bot.kit.replies",
            ),
            (
                "[host]",
                "[host]\ndatabase = \"mysql://db/x\"",
                "host.database",
            ),
            ("[host]", "[host]\nadmin_token = \"x\"", "host.admin_token"),
            (
                "[host]",
                "[host]\ndatabase = \"postgres://onair:pw@db/x\"",
                "ONAIR_HOST_DATABASE",
            ),
            ("[app]", "[app]\nclient_secret = \"x\"", "app.client_secret"),
            ("[app]", "[app]\nscope = \"live.read pizza\"", "app.scope"),
        ];
        for (from, to, key) in cases {
            let text = GOOD.replacen(from, to, 1);
            let err = parse(&text).unwrap_err();
            assert!(
                err.key.contains(key) || err.message.contains(key),
                "{key}: {err}"
            );
        }
        let missing = GOOD.replace("client_id = \"3f2504e0-4f89-11d3-9a0c-0305e82c3301\"\n", "");
        let err = parse(&missing).unwrap_err();
        assert!(err.to_string().contains("client_id"), "{err}");
    }

    #[test]
    fn every_reply_key_is_set_in_the_kit_and_a_dj_overrides_key_by_key() {
        let text = GOOD.replacen(
            "[bot.replies.commands]",
            "[bot.replies]\nwelcome_many = \"Hi all: {nicknames}\"\nthanks_many = \"Thanks, {nicknames}!\"\n\
             and = \" & \"\nno_donors = \"Nobody yet.\"\n\
             [bot.replies.fresh_ms]\nwelcome = 5000\nthanks = 9000\n[bot.replies.commands]",
            1,
        )
        .replacen(
            "welcome = \"Hi {nickname}\"",
            "welcome = \"Hi {nickname}\"\nwelcome_back_many = \"Back: {nicknames}\"\n\
             [dj.7.replies.fresh_ms]\nwelcome = 7000\n[dj.7.replies.commands]\nhello = \"Yo {rest}\"",
            1,
        );
        let c = parse(&text).unwrap();
        let all = c.behaviour.replies().unwrap();
        assert_eq!(all.welcome_many.as_deref(), Some("Hi all: {nicknames}"));
        assert_eq!(all.thanks_many.as_deref(), Some("Thanks, {nicknames}!"));
        assert_eq!(all.welcome_back_many, None);
        assert_eq!(
            (all.and.as_str(), all.no_donors.as_str()),
            (" & ", "Nobody yet.")
        );
        assert_eq!((all.fresh_ms.welcome, all.fresh_ms.thanks), (5000, 9000));
        assert_eq!(all.fresh_ms.command, 30_000);
        let seven = c.behaviour(7).replies().unwrap();
        assert_eq!(seven.welcome, "Hi {nickname}");
        assert_eq!(
            seven.welcome_back_many.as_deref(),
            Some("Back: {nicknames}")
        );
        assert_eq!(seven.welcome_many, all.welcome_many);
        assert_eq!(
            (seven.fresh_ms.welcome, seven.fresh_ms.thanks),
            (7000, 9000)
        );
        assert_eq!(seven.commands["hello"], "Yo {rest}");
        assert_eq!(seven.and, " & ");
        assert_eq!(all.commands["hello"], "Hello, {nickname}!");
        // A DJ's own kit keeps the replies ([bot.replies] and its own).
        let own = text.replacen(
            "[dj.7.replies]",
            "[dj.7]\nkit = { commands = [{ name = \"hello\" }] }\n[dj.7.replies]",
            1,
        );
        let c = parse(&own).unwrap();
        assert!(!c.behaviour(7).kit.tally);
        assert_eq!(c.behaviour(7).replies().unwrap().welcome, "Hi {nickname}");
    }

    #[test]
    fn values_out_of_bounds_are_refused() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "[host]",
                "[host]\nstart_spread_ms = 9223372036854775807",
                "host.start_spread_ms",
            ),
            (
                "[host]",
                "[host]\nstart_spread_ms = 3600001",
                "host.start_spread_ms",
            ),
            (
                "[host]",
                "[host]\nprobe_budget_per_s = 0",
                "host.probe_budget_per_s",
            ),
            (
                "[host]",
                "[host]\nprobe_budget_per_s = 10001",
                "host.probe_budget_per_s",
            ),
            (
                "[host]",
                "[host]\nprobe_budget_per_s = -5",
                "host.probe_budget_per_s",
            ),
            (
                "[bot.kit]",
                "[bot]\nwatchdog_ms = 1\n[bot.kit]",
                "bot.watchdog_ms",
            ),
            (
                "[bot.kit]",
                "[bot]\nwatchdog_ms = 14999\n[bot.kit]",
                "bot.watchdog_ms",
            ),
            (
                "[bot.kit]",
                "[bot]\nlisteners_every_ms = 1\n[bot.kit]",
                "bot.listeners_every_ms",
            ),
            (
                "[bot.kit]",
                "[bot]\nlisteners_every_ms = 0\n[bot.kit]",
                "bot.listeners_every_ms",
            ),
            (
                "[host]",
                "[host]\nheader_timeout_ms = 0",
                "host.header_timeout_ms",
            ),
            (
                "[host]",
                "[host]\nrequest_timeout_ms = 600001",
                "host.request_timeout_ms",
            ),
            (
                "[host]",
                "[host]\nmax_connections = 0",
                "host.max_connections",
            ),
            (
                "[host]",
                "[host]\nmax_streams_per_session = 0",
                "host.max_streams_per_session",
            ),
            (
                "[host]",
                "[host]\ndatabase = \"sqlite::memory:\"",
                "host.database",
            ),
            ("[host]", "[host]\ndatabase = \":memory:\"", "host.database"),
            (
                "[host]",
                "[host]\ndatabase = \"sqlite://x.db?mode=memory&cache=shared\"",
                "host.database",
            ),
        ];
        for (from, to, key) in cases {
            let text = GOOD.replacen(from, to, 1);
            let err = parse(&text).unwrap_err();
            assert_eq!(&err.key, key, "{to}: {err}");
            assert!(!err.message.is_empty() && !err.message.contains('\n'));
        }
        // At the bounds: accepted.
        let text = GOOD.replacen(
            "[bot.kit]",
            "[bot]\nwatchdog_ms = 15000\nlisteners_every_ms = 5000\n[bot.kit]",
            1,
        );
        let c = parse(&text.replacen("[host]", "[host]\nstart_spread_ms = 3600000", 1)).unwrap();
        assert_eq!(c.watchdog_ms, Some(15_000));
        assert_eq!(c.listeners_every_ms, Some(5_000));
        assert_eq!(c.start_spread_ms, 3_600_000);
        for budget in [1, 10_000] {
            let text = GOOD.replacen(
                "[host]",
                &format!("[host]\nprobe_budget_per_s = {budget}"),
                1,
            );
            assert_eq!(parse(&text).unwrap().probe_budget_per_s, budget);
        }
        assert_eq!(
            parse(GOOD).unwrap().probe_budget_per_s,
            PROBE_BUDGET_DEFAULT
        );
        // In memory when asked for.
        let c = parse(&GOOD.replacen(
            "[host]",
            "[host]\ndatabase = \"sqlite::memory:\"\nephemeral = true",
            1,
        ))
        .unwrap();
        assert_eq!(c.database_url.expose(), "sqlite::memory:");
    }

    #[test]
    fn limits_have_defaults_and_can_be_set() {
        let c = parse(GOOD).unwrap();
        assert_eq!(c.limits, Limits::default());
        assert_eq!(c.limits.header_timeout, std::time::Duration::from_secs(10));
        assert_eq!(c.limits.request_timeout, std::time::Duration::from_secs(60));
        assert_eq!(c.limits.max_connections, None);
        let c = parse(&GOOD.replacen(
            "[host]",
            "[host]\nheader_timeout_ms = 500\nmax_connections = 40\nmax_streams_per_client = 3",
            1,
        ))
        .unwrap();
        assert_eq!(
            c.limits.header_timeout,
            std::time::Duration::from_millis(500)
        );
        assert_eq!(c.limits.max_connections, Some(40));
        assert_eq!(c.limits.max_streams_per_client, 3);
    }

    #[test]
    fn the_admin_token_is_trimmed_and_long_enough() {
        let padded = |n: &str| match n {
            ENV_ADMIN_TOKEN => Some("  admin-token-0123456789 \n".to_owned()),
            other => env(other),
        };
        let c = HostConfig::parse(GOOD, Path::new("."), &padded).unwrap();
        assert_eq!(c.admin_token.expose(), "admin-token-0123456789");
        // 16 characters only with the spaces: refused.
        let short = |n: &str| match n {
            ENV_ADMIN_TOKEN => Some("   fifteen-chars-x   ".to_owned()),
            other => env(other),
        };
        let err = HostConfig::parse(GOOD, Path::new("."), &short).unwrap_err();
        assert_eq!(err.key, ENV_ADMIN_TOKEN);
        assert!(!err.to_string().contains("fifteen"), "{err}");
        let sixteen = |n: &str| match n {
            ENV_ADMIN_TOKEN => Some("sixteen-chars-ok".to_owned()),
            other => env(other),
        };
        assert!(HostConfig::parse(GOOD, Path::new("."), &sixteen).is_ok());
    }

    #[test]
    fn secrets_come_from_the_environment_and_never_show() {
        let none = |_: &str| None;
        let err = HostConfig::parse(GOOD, Path::new("."), &none).unwrap_err();
        assert_eq!(err.key, ENV_CLIENT_SECRET);
        let short_admin = |n: &str| match n {
            ENV_ADMIN_TOKEN => Some("short".to_owned()),
            other => env(other),
        };
        let err = HostConfig::parse(GOOD, Path::new("."), &short_admin).unwrap_err();
        assert_eq!(err.key, ENV_ADMIN_TOKEN);
        let bad_key = |n: &str| match n {
            ENV_KEY => Some("c2hvcnQ=".to_owned()),
            other => env(other),
        };
        let err = HostConfig::parse(GOOD, Path::new("."), &bad_key).unwrap_err();
        assert_eq!(err.key, ENV_KEY);
        let c = parse(GOOD).unwrap();
        let shown = format!("{c:?}");
        for secret in ["s3cret-value", "admin-token-0123456789", KEY] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }

    #[test]
    fn traces_are_off_unless_an_endpoint_is_named_in_the_file_or_the_environment() {
        assert_eq!(parse(GOOD).unwrap().traces, None);
        let with = |host: &str| GOOD.replace("[host]", &format!("[host.traces]\n{host}\n[host]"));
        let c = parse(&with("otlp_endpoint = \"http://127.0.0.1:4318/\"")).unwrap();
        let traces = c.traces.expect("traces");
        assert_eq!(traces.otlp_endpoint, "http://127.0.0.1:4318/");
        assert!((traces.sample_ratio - 1.0).abs() < f64::EPSILON);
        let c = parse(&with(
            "otlp_endpoint = \"https://collector:4318\"\nsample_ratio = 0.25",
        ))
        .unwrap();
        assert!((c.traces.expect("traces").sample_ratio - 0.25).abs() < f64::EPSILON);
        // The standard variable, when the file names none; the file wins.
        let standard = |n: &str| match n {
            crate::traces::ENV_OTLP_ENDPOINT => Some("http://10.0.0.5:4318".to_owned()),
            other => env(other),
        };
        let c = HostConfig::parse(GOOD, Path::new("."), &standard).unwrap();
        assert_eq!(
            c.traces.map(|t| t.otlp_endpoint).as_deref(),
            Some("http://10.0.0.5:4318")
        );
        let text = with("otlp_endpoint = \"http://127.0.0.1:4318\"");
        let c = HostConfig::parse(&text, Path::new("."), &standard).unwrap();
        assert_eq!(
            c.traces.map(|t| t.otlp_endpoint).as_deref(),
            Some("http://127.0.0.1:4318")
        );
        for (host, key) in [
            (
                "otlp_endpoint = \"127.0.0.1:4318\"",
                "host.traces.otlp_endpoint",
            ),
            (
                "otlp_endpoint = \"http://127.0.0.1:4318\"\nsample_ratio = 1.5",
                "host.traces.sample_ratio",
            ),
            ("sample_ratio = 0.5", "host.traces.sample_ratio"),
            (
                "endpoint = \"http://127.0.0.1:4318\"",
                "host.traces.endpoint",
            ),
        ] {
            let err = parse(&with(host)).unwrap_err();
            assert_eq!(err.key, key, "{host}: {err}");
        }
    }
}
