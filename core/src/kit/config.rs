//! What the kit does, configured once on [`BotConfig::kit`](crate::BotConfig):
//! the commands and who may run them, greetings, milestones, the tally.
//! Read from JSON ([`KitConfig::from_json`]) or from any serde format (the
//! CLI and `onair host` read TOML with the same keys); every mistake is a
//! [`ConfigError`] that names the key.
//!
//! ```toml
//! prefix = "!"                      # default "!"
//! ignore = ["id-of-another-bot"]    # posts never taken as commands
//! tally = true                      # the per-broadcast tally, final at LIVE_ENDED
//!
//! [[commands]]
//! name = "hello"
//! aliases = ["hi"]
//! allowed = "anyone"                # anyone | managers | dj
//! cooldown_ms = 10000               # per person; default none
//! room_cooldown_ms = 5000           # the whole room; default none
//!
//! [greetings]
//! first = true                      # a person's first sign in a broadcast
//! welcome_back_after_ms = 600000    # a return after this long unseen; omit: never
//!
//! [milestones]
//! hearts_every = 100                # the broadcast's hearts
//! donations_every = 1000            # each person's donation total
//!
//! [replies]                         # said by the bot itself: see kit::replies
//! welcome = "Welcome, {nickname}! 🎧"
//! ```
//!
//! ```
//! use onair::kit::KitConfig;
//!
//! let config = KitConfig::from_json(r#"{"commands":[{"name":"hello","aliases":["hi"]}],
//!     "greetings":{"welcome_back_after_ms":600000},"milestones":{"hearts_every":100}}"#)?;
//! assert_eq!(config.commands[0].name, "hello");
//! let bad = KitConfig::from_json(r#"{"commands":[{"name":"x","allowed":"admins"}]}"#).unwrap_err();
//! assert_eq!(bad.key, "commands[0].allowed");
//! # Ok::<(), onair::kit::ConfigError>(())
//! ```

use serde::{Deserialize, Serialize};

use super::commands::{fold, Allowed};

/// The kit's configuration; all of it optional. The default configures
/// nothing: the bot then behaves as a bot without a kit (no kit actions, no
/// kit state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KitConfig {
    /// What starts a command (default `!`), right before its name.
    #[serde(default = "default_prefix")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub prefix: String,
    /// The commands, each with who may run it.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub commands: Vec<CommandConfig>,
    /// Ids whose chat is never a command (other bots: two bots answering
    /// each other loop).
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub ignore: Vec<String>,
    /// Greetings, when set.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub greetings: Option<GreetingsConfig>,
    /// Milestones, when set.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub milestones: Option<MilestonesConfig>,
    /// The per-broadcast tally, handed out with the broadcast's end.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub tally: bool,
    /// The replies the bot says by itself, when set (see
    /// [`RepliesConfig`](super::replies::RepliesConfig)): greetings, thanks,
    /// milestones and command answers go out without a handler, merged
    /// when chat is behind, dropped with a notice when no longer fresh.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub replies: Option<super::replies::RepliesConfig>,
}

fn default_prefix() -> String {
    "!".to_owned()
}

impl Default for KitConfig {
    fn default() -> Self {
        KitConfig {
            prefix: default_prefix(),
            commands: Vec::new(),
            ignore: Vec::new(),
            greetings: None,
            milestones: None,
            tally: false,
            replies: None,
        }
    }
}

/// One command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CommandConfig {
    /// Its name, compared case-insensitively (`!Hello` runs `hello`).
    pub name: String,
    /// Other names that run it.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub aliases: Vec<String>,
    /// Who may run it (default: anyone).
    #[serde(default = "anyone")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub allowed: Allowed,
    /// A person who ran it runs it again only after this long (ms); others
    /// are not held back. Default: no cooldown.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub cooldown_ms: Option<u64>,
    /// Once anyone ran it, nobody runs it again for this long (ms): a
    /// `!top` fifty people type in a second is answered once. Default: no
    /// room cooldown.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub room_cooldown_ms: Option<u64>,
}

fn anyone() -> Allowed {
    Allowed::Anyone
}

impl CommandConfig {
    /// A command anyone may run, no aliases, no cooldown.
    ///
    /// ```
    /// use onair::kit::{Allowed, CommandConfig};
    /// let top = CommandConfig::new("top").allowed(Allowed::Managers).cooldown_ms(30_000);
    /// assert_eq!(top.cooldown_ms, Some(30_000));
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        CommandConfig {
            name: name.into(),
            aliases: Vec::new(),
            allowed: Allowed::Anyone,
            cooldown_ms: None,
            room_cooldown_ms: None,
        }
    }

    /// Adds an alias.
    pub fn alias(mut self, alias: impl Into<String>) -> Self {
        self.aliases.push(alias.into());
        self
    }

    /// Who may run it.
    pub fn allowed(mut self, allowed: Allowed) -> Self {
        self.allowed = allowed;
        self
    }

    /// A per-person cooldown.
    pub fn cooldown_ms(mut self, ms: u64) -> Self {
        self.cooldown_ms = Some(ms);
        self
    }

    /// A cooldown for the whole room.
    pub fn room_cooldown_ms(mut self, ms: u64) -> Self {
        self.room_cooldown_ms = Some(ms);
        self
    }
}

/// When to greet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GreetingsConfig {
    /// Greet a person's first sign in a broadcast (default true): their join
    /// when the bot is a manager (presence needs manager level), otherwise
    /// their first chat.
    #[serde(default = "yes")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub first: bool,
    /// Welcome a person back when they join (or chat) after at least this
    /// long without a sign of them (ms); `None`: never.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub welcome_back_after_ms: Option<u64>,
}

fn yes() -> bool {
    true
}

impl Default for GreetingsConfig {
    fn default() -> Self {
        GreetingsConfig {
            first: true,
            welcome_back_after_ms: None,
        }
    }
}

/// When to call a milestone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MilestonesConfig {
    /// Every this many hearts for the broadcast (by `totalAmount`).
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub hearts_every: Option<u64>,
    /// Every this many currency units one person donated in the broadcast.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub donations_every: Option<u64>,
}

/// A configuration the kit refused: the key (`commands[1].name`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kit config: {key}: {message}")]
pub struct ConfigError {
    /// Where: a dotted path with list indexes, empty for the whole document.
    pub key: String,
    /// What is wrong there.
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

impl KitConfig {
    /// Reads a configuration from JSON and checks it ([`validate`](Self::validate)).
    pub fn from_json(text: &str) -> Result<KitConfig, ConfigError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let config: KitConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let key = e.path().to_string();
            let message = e.into_inner().to_string();
            // serde_json appends its position; the key says where already.
            let message = match message.rfind(" at line ") {
                Some(at) => message[..at].to_owned(),
                None => message,
            };
            ConfigError::at(if key == "." { String::new() } else { key }, message)
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what serde cannot: a usable prefix, command names and aliases
    /// that are words and distinct (case-insensitively), steps above zero.
    ///
    /// ```
    /// use onair::kit::{CommandConfig, KitConfig};
    /// let mut config = KitConfig::default();
    /// config.commands = vec![CommandConfig::new("hi"), CommandConfig::new("x").alias("HI")];
    /// assert_eq!(config.validate().unwrap_err().key, "commands[1].aliases[0]");
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.prefix.is_empty() || self.prefix.chars().any(char::is_whitespace) {
            return Err(ConfigError::at(
                "prefix",
                "must be non-empty, without whitespace",
            ));
        }
        let mut seen: Vec<String> = Vec::new();
        for (i, command) in self.commands.iter().enumerate() {
            let names = std::iter::once((format!("commands[{i}].name"), &command.name)).chain(
                command
                    .aliases
                    .iter()
                    .enumerate()
                    .map(|(j, a)| (format!("commands[{i}].aliases[{j}]"), a)),
            );
            for (key, name) in names {
                if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(ConfigError::at(
                        key,
                        "a command name is one word (no whitespace)",
                    ));
                }
                let folded = fold(name);
                if seen.contains(&folded) {
                    return Err(ConfigError::at(key, format!("`{name}` is named twice")));
                }
                seen.push(folded);
            }
        }
        if let Some(m) = &self.milestones {
            if m.hearts_every == Some(0) {
                return Err(ConfigError::at(
                    "milestones.hearts_every",
                    "must be above zero",
                ));
            }
            if m.donations_every == Some(0) {
                return Err(ConfigError::at(
                    "milestones.donations_every",
                    "must be above zero",
                ));
            }
        }
        if let Some(replies) = &self.replies {
            let names: Vec<String> = self.commands.iter().map(|c| c.name.clone()).collect();
            replies
                .validate("replies", &names)
                .map_err(|(key, message)| ConfigError::at(key, message))?;
        }
        Ok(())
    }

    /// Whether nothing is configured (the bot then has no kit).
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
            && self.greetings.is_none()
            && self.milestones.is_none()
            && !self.tally
            && self.replies.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mistake_names_its_key() {
        for (text, key) in [
            (r#"{"prefix":""}"#, "prefix"),
            (r#"{"prefix":"! "}"#, "prefix"),
            (r#"{"prefx":"!"}"#, "prefx"),
            (r#"{"commands":{}}"#, "commands"),
            (r#"{"commands":[{"aliases":[]}]}"#, "commands[0]"),
            (r#"{"commands":[{"name":"a b"}]}"#, "commands[0].name"),
            (
                r#"{"commands":[{"name":"a"},{"name":"A"}]}"#,
                "commands[1].name",
            ),
            (
                r#"{"commands":[{"name":"a","cooldown_ms":-1}]}"#,
                "commands[0].cooldown_ms",
            ),
            (r#"{"greetings":{"first":"yes"}}"#, "greetings.first"),
            (
                r#"{"milestones":{"hearts_every":0}}"#,
                "milestones.hearts_every",
            ),
            (
                r#"{"milestones":{"donations_every":0}}"#,
                "milestones.donations_every",
            ),
            (r#"{"tally":1}"#, "tally"),
        ] {
            let e = KitConfig::from_json(text).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
            assert!(!e.message.is_empty());
        }
        assert!(KitConfig::from_json("{}").unwrap().is_empty());
        let e = KitConfig::from_json("{").unwrap_err();
        assert!(e.to_string().starts_with("kit config: "), "{e}");
    }

    #[test]
    fn a_whole_configuration_reads_and_writes_back() {
        let text = r#"{"prefix":"?","commands":[{"name":"top","aliases":["t"],"allowed":"managers","cooldown_ms":5000,"room_cooldown_ms":null}],"ignore":["bot2"],"greetings":{"first":true,"welcome_back_after_ms":60000},"milestones":{"hearts_every":100,"donations_every":null},"tally":true,"replies":null}"#;
        let config = KitConfig::from_json(text).unwrap();
        assert_eq!(config.commands[0].allowed, Allowed::Managers);
        assert_eq!(serde_json::to_string(&config).unwrap(), text);
        assert!(!config.is_empty());
    }
}
