//! Chat commands: `!name arg…` parsed from a `chat` event, and who may run it.
//!
//! Register the commands once with [`Commands`], then ask
//! [`Commands::match_chat`] about every chat: `None` when the chat is not one
//! of them, `Some(Ok(`[`Invocation`]`))` to run, `Some(Err(`[`Denied`]`))`
//! when the poster may not run it.
//!
//! The rules:
//! - The message starts with the prefix (default `!`; leading whitespace is
//!   allowed), immediately followed by the name, which runs to the first
//!   whitespace. `!` alone or `! hello` is not a command.
//! - Names are compared case-insensitively: both sides are lowercased with
//!   [`char::to_lowercase`], and final sigma `ς` and long s `ſ` are mapped to
//!   `σ` and `s`. That approximates Unicode simple case folding (`!HELLO`,
//!   `!Hello` and `!hello` match; `!ΣΟΦΟΣ` matches `σοφος`). Text is not
//!   normalized: a precomposed `é` and `e` + U+0301 differ.
//! - Arguments: see [`split_args`].
//! - Who may run it ([`Allowed`]): anyone; managers, known from the
//!   `isManager` of their latest join as remembered by the
//!   [`Audience`]; or the DJ (the chat's `isDj`). The DJ may run
//!   manager commands.
//! - The bot's own posts ([`Commands::own_id`]; the stream never echoes them,
//!   spec 4.6 rule 6, but a defensive check costs nothing) and other bots'
//!   posts ([`Commands::ignore_bots`]) are never commands: two bots answering
//!   each other is a loop.
//!
//! ```
//! use onair::event::{Chat, User};
//! use onair::kit::audience::Audience;
//! use onair::kit::commands::{Allowed, Commands, Role};
//! use onair::proto::time::Timestamp;
//!
//! let commands = Commands::new()
//!     .command("hello", Allowed::Anyone)
//!     .command("top", Allowed::Anyone)
//!     .command("reset", Allowed::Managers);
//! let audience = Audience::new();
//! let chat = |message: &str| Chat {
//!     user: User { id: "u1".into(), nickname: Some("Mina".into()) },
//!     is_dj: false,
//!     message: message.into(),
//!     sent_time: Timestamp::new("2024-11-22T04:33:20Z"),
//! };
//!
//! let run = commands.match_chat(&chat("!Hello \"dear DJ\" now"), &audience).unwrap().unwrap();
//! assert_eq!(run.name, "hello");
//! assert_eq!(run.args, ["dear DJ", "now"]);
//! assert_eq!(run.role, Role::Listener);
//!
//! let denied = commands.match_chat(&chat("!reset"), &audience).unwrap().unwrap_err();
//! assert_eq!(denied.needed, Allowed::Managers);
//!
//! assert!(commands.match_chat(&chat("!dance"), &audience).is_none()); // unknown
//! assert!(commands.match_chat(&chat("hello"), &audience).is_none()); // no prefix
//! ```

use crate::event::{Chat, User};
use crate::kit::audience::Audience;
use crate::wire::name_enum;

name_enum! {
/// Who may run a command.
///
/// ```
/// use onair::kit::commands::{Allowed, Role};
///
/// assert!(Allowed::Managers.permits(Role::Dj));
/// assert!(!Allowed::Managers.permits(Role::Listener));
/// assert_eq!(Allowed::from_name("managers"), Some(Allowed::Managers));
/// ```
pub enum Allowed {
    /// Anyone in the chat.
    Anyone = "anyone",
    /// Managers (from their join's `isManager`) and the DJ.
    Managers = "managers",
    /// The DJ only (the chat's `isDj`).
    Dj = "dj",
}
}

impl Allowed {
    /// Whether someone with `role` may run a command allowed to `self`.
    ///
    /// ```
    /// use onair::kit::commands::{Allowed, Role};
    ///
    /// assert!(Allowed::Anyone.permits(Role::Listener));
    /// assert!(!Allowed::Dj.permits(Role::Manager));
    /// ```
    pub fn permits(self, role: Role) -> bool {
        match self {
            Allowed::Anyone => true,
            Allowed::Managers => matches!(role, Role::Manager | Role::Dj),
            Allowed::Dj => role == Role::Dj,
        }
    }
}

name_enum! {
/// What the poster of a chat is, as far as the bot can tell.
///
/// ```
/// use onair::kit::commands::Role;
///
/// assert_ne!(Role::Manager, Role::Dj);
/// assert_eq!(Role::Manager.as_str(), "manager");
/// ```
pub enum Role {
    /// A listener (or a manager whose join the bot did not see: presence
    /// arrives only when the bot itself is a manager).
    Listener = "listener",
    /// A listener whose latest join said `isManager`.
    Manager = "manager",
    /// The DJ (`isDj`).
    Dj = "dj",
}
}

/// A command to run: what was asked, by whom.
///
/// ```
/// # use onair::event::{Chat, User};
/// # use onair::kit::audience::Audience;
/// # use onair::kit::commands::{Allowed, Commands};
/// # use onair::proto::time::Timestamp;
/// let commands = Commands::new().command("say", Allowed::Anyone);
/// let chat = Chat {
///     user: User { id: "u1".into(), nickname: None },
///     is_dj: false,
///     message: "!say  hello   world".into(),
///     sent_time: Timestamp::new("t"),
/// };
/// let run = commands.match_chat(&chat, &Audience::new()).unwrap().unwrap();
/// assert_eq!(run.rest, "hello   world"); // the raw text after the name
/// assert_eq!(run.args, ["hello", "world"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The command's name as registered (not as typed).
    pub name: String,
    /// The arguments, split by [`split_args`].
    pub args: Vec<String>,
    /// The text after the name, as typed, without surrounding whitespace.
    pub rest: String,
    /// Who asked.
    pub user: User,
    /// What they are.
    pub role: Role,
}

/// A command that was asked for by someone who may not run it.
///
/// ```
/// # use onair::event::{Chat, User};
/// # use onair::kit::audience::Audience;
/// # use onair::kit::commands::{Allowed, Commands, Role};
/// # use onair::proto::time::Timestamp;
/// let commands = Commands::new().command("stop", Allowed::Dj);
/// let chat = Chat {
///     user: User { id: "u1".into(), nickname: None },
///     is_dj: false,
///     message: "!stop".into(),
///     sent_time: Timestamp::new("t"),
/// };
/// let denied = commands.match_chat(&chat, &Audience::new()).unwrap().unwrap_err();
/// assert_eq!((denied.name.as_str(), denied.needed, denied.role), ("stop", Allowed::Dj, Role::Listener));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The command's name as registered.
    pub name: String,
    /// Who may run it.
    pub needed: Allowed,
    /// Who asked.
    pub user: User,
    /// What they are.
    pub role: Role,
}

#[derive(Debug, Clone)]
struct Command {
    name: String,
    folded: String,
    allowed: Allowed,
}

/// The registry of a bot's commands, with its prefix and the posters it
/// ignores. Built once; [`match_chat`](Commands::match_chat) takes `&self`.
///
/// ```
/// use onair::kit::commands::{Allowed, Commands};
///
/// let commands = Commands::new()
///     .prefix("?")
///     .command("hello", Allowed::Anyone)
///     .command("reset", Allowed::Managers)
///     .own_id("bot-id")
///     .ignore_bots(["other-bot-id"]);
/// let names: Vec<&str> = commands.names().map(|(name, _)| name).collect();
/// assert_eq!(names, ["hello", "reset"]);
/// ```
#[derive(Debug, Clone)]
pub struct Commands {
    prefixes: Vec<String>,
    commands: Vec<Command>,
    ignored: Vec<String>,
}

impl Default for Commands {
    fn default() -> Self {
        Self {
            prefixes: vec!["!".to_owned()],
            commands: Vec::new(),
            ignored: Vec::new(),
        }
    }
}

impl Commands {
    /// No commands yet, prefix `!`.
    ///
    /// ```
    /// assert_eq!(onair::kit::commands::Commands::new().names().count(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the prefix, replacing every one accepted so far. An empty prefix
    /// makes every message whose first word is a command name a command.
    ///
    /// ```
    /// # use onair::event::{Chat, User};
    /// # use onair::kit::audience::Audience;
    /// # use onair::proto::time::Timestamp;
    /// use onair::kit::commands::{Allowed, Commands};
    ///
    /// let commands = Commands::new().prefix("bot,").command("hi", Allowed::Anyone);
    /// # let chat = |m: &str| Chat { user: User { id: "u".into(), nickname: None },
    /// #     is_dj: false, message: m.into(), sent_time: Timestamp::new("t") };
    /// assert!(commands.match_chat(&chat("bot,hi"), &Audience::new()).is_some());
    /// assert!(commands.match_chat(&chat("!hi"), &Audience::new()).is_none());
    /// ```
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefixes = vec![prefix.into()];
        self
    }

    /// Accepts another prefix too, e.g. the fullwidth `！` (U+FF01) that CJK
    /// input methods type for `!`.
    ///
    /// ```
    /// # use onair::event::{Chat, User};
    /// # use onair::kit::audience::Audience;
    /// # use onair::proto::time::Timestamp;
    /// use onair::kit::commands::{Allowed, Commands};
    ///
    /// let commands = Commands::new().also_prefix("！").command("hi", Allowed::Anyone);
    /// # let chat = |m: &str| Chat { user: User { id: "u".into(), nickname: None },
    /// #     is_dj: false, message: m.into(), sent_time: Timestamp::new("t") };
    /// assert!(commands.match_chat(&chat("！hi"), &Audience::new()).is_some());
    /// assert!(commands.match_chat(&chat("!hi"), &Audience::new()).is_some());
    /// ```
    pub fn also_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefixes.push(prefix.into());
        self
    }

    /// Registers command `name` (without the prefix). Registering a name
    /// again (in any case) replaces the earlier one. A name holding
    /// whitespace, or an empty one, never matches.
    ///
    /// ```
    /// use onair::kit::commands::{Allowed, Commands};
    ///
    /// let commands = Commands::new()
    ///     .command("Top", Allowed::Anyone)
    ///     .command("top", Allowed::Managers);
    /// assert_eq!(commands.names().collect::<Vec<_>>(), [("top", Allowed::Managers)]);
    /// ```
    pub fn command(mut self, name: impl Into<String>, allowed: Allowed) -> Self {
        let name = name.into();
        let folded = fold(&name);
        self.commands.retain(|c| c.folded != folded);
        self.commands.push(Command {
            name,
            folded,
            allowed,
        });
        self
    }

    /// The bot's own person `id`: its posts are never commands.
    ///
    /// ```
    /// # use onair::event::{Chat, User};
    /// # use onair::kit::audience::Audience;
    /// # use onair::proto::time::Timestamp;
    /// use onair::kit::commands::{Allowed, Commands};
    ///
    /// let commands = Commands::new().command("hi", Allowed::Anyone).own_id("me");
    /// # let chat = Chat { user: User { id: "me".into(), nickname: None },
    /// #     is_dj: false, message: "!hi".into(), sent_time: Timestamp::new("t") };
    /// assert!(commands.match_chat(&chat, &Audience::new()).is_none());
    /// ```
    pub fn own_id(mut self, id: impl Into<String>) -> Self {
        self.ignored.push(id.into());
        self
    }

    /// Other bots' person `id`s: their posts are never commands, so two bots
    /// cannot answer each other in a loop.
    ///
    /// ```
    /// use onair::kit::commands::Commands;
    ///
    /// let commands = Commands::new().ignore_bots(["bot-a", "bot-b"]);
    /// assert!(commands.ignores("bot-b") && !commands.ignores("u1"));
    /// ```
    pub fn ignore_bots<I, S>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.ignored.extend(ids.into_iter().map(Into::into));
        self
    }

    /// Whether posts of person `id` are ignored (the bot itself, other bots).
    ///
    /// ```
    /// use onair::kit::commands::Commands;
    ///
    /// assert!(Commands::new().own_id("me").ignores("me"));
    /// ```
    pub fn ignores(&self, id: &str) -> bool {
        self.ignored.iter().any(|ignored| ignored == id)
    }

    /// The registered commands, in registration order (for a `!help`).
    ///
    /// ```
    /// use onair::kit::commands::{Allowed, Commands};
    ///
    /// let commands = Commands::new().command("hello", Allowed::Anyone);
    /// assert_eq!(commands.names().next(), Some(("hello", Allowed::Anyone)));
    /// ```
    pub fn names(&self) -> impl Iterator<Item = (&str, Allowed)> {
        self.commands.iter().map(|c| (c.name.as_str(), c.allowed))
    }

    /// The command a chat asks for: `None` when it is not one of the
    /// registered commands (or comes from an ignored poster), otherwise the
    /// [`Invocation`] to run or why the poster may not. `audience` tells who
    /// the managers are.
    ///
    /// ```
    /// # use onair::event::{Chat, Event, Presence, PresenceType, User};
    /// # use onair::proto::time::Timestamp;
    /// use onair::kit::audience::Audience;
    /// use onair::kit::commands::{Allowed, Commands, Role};
    ///
    /// let commands = Commands::new().command("reset", Allowed::Managers);
    /// let mut audience = Audience::new();
    /// audience.on_event(&Event::Presence(Presence {
    ///     user: User { id: "m1".into(), nickname: None },
    ///     kind: PresenceType::Join,
    ///     fan_rank: None,
    ///     is_manager: true,
    ///     favorite_temperature: None,
    ///     time: Timestamp::new("t"),
    /// }));
    /// let chat = Chat {
    ///     user: User { id: "m1".into(), nickname: None },
    ///     is_dj: false,
    ///     message: "!RESET".into(),
    ///     sent_time: Timestamp::new("t"),
    /// };
    /// let run = commands.match_chat(&chat, &audience).unwrap().unwrap();
    /// assert_eq!((run.name.as_str(), run.role), ("reset", Role::Manager));
    /// ```
    pub fn match_chat(
        &self,
        chat: &Chat,
        audience: &Audience,
    ) -> Option<Result<Invocation, Denied>> {
        if self.ignores(&chat.user.id) {
            return None;
        }
        let text = chat.message.trim_start();
        let after = self
            .prefixes
            .iter()
            .find_map(|prefix| text.strip_prefix(prefix.as_str()))?;
        let name_end = after.find(char::is_whitespace).unwrap_or(after.len());
        let (name, rest) = after.split_at(name_end);
        if name.is_empty() {
            return None;
        }
        let folded = fold(name);
        let command = self.commands.iter().find(|c| c.folded == folded)?;
        let role = if chat.is_dj {
            Role::Dj
        } else if audience.is_manager(&chat.user.id) {
            Role::Manager
        } else {
            Role::Listener
        };
        if !command.allowed.permits(role) {
            return Some(Err(Denied {
                name: command.name.clone(),
                needed: command.allowed,
                user: chat.user.clone(),
                role,
            }));
        }
        let rest = rest.trim();
        Some(Ok(Invocation {
            name: command.name.clone(),
            args: split_args(rest),
            rest: rest.to_owned(),
            user: chat.user.clone(),
            role,
        }))
    }
}

/// A name as compared: lowercased per `char`, with the two common letters
/// whose lowercase differs from their case fold mapped too.
fn fold(name: &str) -> String {
    name.chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'ς' => 'σ',
            'ſ' => 's',
            other => other,
        })
        .collect()
}

fn is_quote(c: char) -> bool {
    // ASCII, the curly quotes phone keyboards type, and the fullwidth one.
    matches!(c, '"' | '\u{201C}' | '\u{201D}' | '\u{FF02}')
}

/// Splits command arguments on whitespace, with double quotes keeping words
/// together.
///
/// - Arguments are separated by runs of Unicode whitespace outside quotes.
/// - A double quote (`"`, the curly `“` `”` phone keyboards type, or the
///   fullwidth `＂`; any of them opens or closes) starts or ends a quoted run,
///   which keeps its whitespace; the quotes themselves are dropped. Quotes
///   may sit inside a word (`a"b c"d` is one argument `ab cd`), and `""` is an
///   empty argument.
/// - There are no escapes: a backslash is an ordinary character (`\o/` stays).
/// - Unbalanced quotes: with an odd number of quote characters, the last one
///   is an ordinary character (`5" tall` stays as typed), so a stray quote
///   never swallows the rest of the message.
///
/// ```
/// use onair::kit::commands::split_args;
///
/// assert_eq!(split_args(r#"add "Mina Kim" 500"#), ["add", "Mina Kim", "500"]);
/// assert_eq!(split_args("“smart quotes” too"), ["smart quotes", "too"]);
/// assert_eq!(split_args(r#"it's 5" tall"#), ["it's", "5\"", "tall"]);
/// assert_eq!(split_args(r#"x "" y"#), ["x", "", "y"]);
/// assert!(split_args("  ").is_empty());
/// ```
pub fn split_args(text: &str) -> Vec<String> {
    let quotes = text.chars().filter(|&c| is_quote(c)).count();
    let last_is_literal = quotes % 2 == 1;
    let mut quotes_seen = 0;
    let mut args = Vec::new();
    let mut current = String::new();
    let mut in_arg = false;
    let mut quoted = false;
    for c in text.chars() {
        if is_quote(c) {
            quotes_seen += 1;
            if !(last_is_literal && quotes_seen == quotes) {
                quoted = !quoted;
                in_arg = true;
                continue;
            }
        } else if c.is_whitespace() && !quoted {
            if in_arg {
                args.push(std::mem::take(&mut current));
                in_arg = false;
            }
            continue;
        }
        current.push(c);
        in_arg = true;
    }
    if in_arg {
        args.push(current);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, Presence, PresenceType};
    use crate::proto::time::Timestamp;
    use proptest::prelude::*;

    fn chat(id: &str, is_dj: bool, message: &str) -> Chat {
        Chat {
            user: User {
                id: id.into(),
                nickname: None,
            },
            is_dj,
            message: message.into(),
            sent_time: Timestamp::new("t"),
        }
    }

    fn join(id: &str, is_manager: bool) -> Event {
        Event::Presence(Presence {
            user: User {
                id: id.into(),
                nickname: None,
            },
            kind: PresenceType::Join,
            fan_rank: None,
            is_manager,
            favorite_temperature: None,
            time: Timestamp::new("t"),
        })
    }

    fn registry() -> Commands {
        Commands::new()
            .command("hello", Allowed::Anyone)
            .command("top", Allowed::Anyone)
            .command("reset", Allowed::Managers)
            .command("stop", Allowed::Dj)
            .own_id("me")
            .ignore_bots(["bot2"])
    }

    fn outcome(commands: &Commands, audience: &Audience, chat: &Chat) -> String {
        match commands.match_chat(chat, audience) {
            None => "-".into(),
            Some(Ok(run)) => format!("run {} {:?} {:?}", run.name, run.role, run.args),
            Some(Err(d)) => format!("deny {} {:?}", d.name, d.role),
        }
    }

    #[test]
    fn names_match_case_insensitively_and_report_the_registered_name() {
        let c = Commands::new().command("Hello", Allowed::Anyone);
        let a = Audience::new();
        for typed in ["!hello", "!HELLO", "!hElLo", "  !Hello", "!hello\u{3000}x"] {
            let run = c.match_chat(&chat("u", false, typed), &a);
            assert_eq!(
                run.and_then(Result::ok).map(|r| r.name),
                Some("Hello".into()),
                "{typed}"
            );
        }
        let greek = Commands::new().command("σοφος", Allowed::Anyone);
        assert!(greek.match_chat(&chat("u", false, "!ΣΟΦΟΣ"), &a).is_some());
        assert!(greek.match_chat(&chat("u", false, "!σοφοσ"), &a).is_some());
    }

    #[test]
    fn not_commands() {
        let c = registry();
        let a = Audience::new();
        for message in [
            "", "hello", "!", "! hello", "!!hello", "!hello2", "!dance", "x !hello", "!hel lo",
        ] {
            assert_eq!(
                outcome(&c, &a, &chat("u", false, message)),
                "-",
                "{message:?}"
            );
        }
    }

    #[test]
    fn who_may_run_what() {
        let c = registry();
        let mut a = Audience::new();
        a.on_event(&join("m", true));
        a.on_event(&join("l", false));
        let table = [
            ("l", false, "!hello", "run hello Listener []"),
            ("l", false, "!reset", "deny reset Listener"),
            ("l", false, "!stop", "deny stop Listener"),
            ("m", false, "!reset", "run reset Manager []"),
            ("m", false, "!stop", "deny stop Manager"),
            ("dj", true, "!reset", "run reset Dj []"),
            ("dj", true, "!stop", "run stop Dj []"),
            ("unseen", false, "!reset", "deny reset Listener"),
        ];
        for (id, is_dj, message, expected) in table {
            assert_eq!(
                outcome(&c, &a, &chat(id, is_dj, message)),
                expected,
                "{id} {message}"
            );
        }
        // A manager removed at their next join loses the right.
        a.on_event(&join("m", false));
        assert_eq!(
            outcome(&c, &a, &chat("m", false, "!reset")),
            "deny reset Listener"
        );
    }

    #[test]
    fn own_and_other_bots_posts_are_ignored() {
        let c = registry();
        let a = Audience::new();
        assert_eq!(outcome(&c, &a, &chat("me", false, "!hello")), "-");
        assert_eq!(outcome(&c, &a, &chat("bot2", false, "!hello")), "-");
        assert_eq!(
            outcome(&c, &a, &chat("u", false, "!hello")),
            "run hello Listener []"
        );
    }

    #[test]
    fn prefixes() {
        let a = Audience::new();
        let c = Commands::new().prefix("").command("hi", Allowed::Anyone);
        assert_eq!(
            outcome(&c, &a, &chat("u", false, "hi there")),
            "run hi Listener [\"there\"]"
        );
        let c = Commands::new()
            .prefix("!!")
            .also_prefix("！")
            .command("hi", Allowed::Anyone);
        assert_eq!(
            outcome(&c, &a, &chat("u", false, "!!hi")),
            "run hi Listener []"
        );
        assert_eq!(
            outcome(&c, &a, &chat("u", false, "！hi")),
            "run hi Listener []"
        );
        assert_eq!(outcome(&c, &a, &chat("u", false, "!hi")), "-");
    }

    #[test]
    fn a_name_with_whitespace_or_empty_never_matches() {
        let c = Commands::new()
            .command("", Allowed::Anyone)
            .command("a b", Allowed::Anyone);
        let a = Audience::new();
        for message in ["!", "! ", "!a b", "!a"] {
            assert_eq!(outcome(&c, &a, &chat("u", false, message)), "-");
        }
    }

    #[test]
    fn arguments() {
        let cases: [(&str, &[&str]); 10] = [
            ("", &[]),
            ("a  b\tc\u{3000}d", &["a", "b", "c", "d"]),
            (r#""a b" c"#, &["a b", "c"]),
            (r#"a"b c"d"#, &["ab cd"]),
            (r#""""#, &[""]),
            (r#"say "hi"#, &["say", "\"hi"]),
            (r#""a b" "c"#, &["a b", "\"c"]),
            (r#"\o/ "x\" y"#, &["\\o/", "x\\", "y"]),
            ("“a b” ＂c d＂", &["a b", "c d"]),
            ("\"  spaced  \"", &["  spaced  "]),
        ];
        for (text, expected) in cases {
            assert_eq!(split_args(text), expected, "{text:?}");
        }
    }

    #[test]
    fn rest_keeps_the_text_as_typed() {
        let c = Commands::new().command("say", Allowed::Anyone);
        let run = c
            .match_chat(&chat("u", false, "!say   \"a  b\"  c  "), &Audience::new())
            .and_then(Result::ok)
            .expect("runs");
        assert_eq!(run.rest, "\"a  b\"  c");
        assert_eq!(run.args, ["a  b", "c"]);
    }

    proptest! {
        #[test]
        fn never_panics_and_args_hold_only_text_from_the_message(message in "\\PC{0,60}") {
            let c = registry();
            let a = Audience::new();
            if let Some(Ok(run)) = c.match_chat(&chat("u", false, &message), &a) {
                for arg in &run.args {
                    prop_assert!(arg.chars().all(|ch| message.contains(ch)));
                }
            }
            let args = split_args(&message);
            // Without quotes, arguments are exactly the whitespace-separated words.
            if !message.chars().any(is_quote) {
                let words: Vec<&str> = message.split_whitespace().collect();
                prop_assert_eq!(args, words);
            }
        }
    }
}
