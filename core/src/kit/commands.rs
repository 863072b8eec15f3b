//! Chat commands: how a chat message names a command, who may run it, and
//! how its arguments split. The configured kit ([`KitConfig`](super::KitConfig))
//! uses these rules to answer with [`Action::Command`](crate::Action::Command).
//!
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
//!   `isManager` of their latest join (presence reaches a bot that is a
//!   manager itself); or the DJ (the chat's `isDj`). The DJ may run manager
//!   commands.

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

/// The name a chat message gives (as typed) and the text after it, when it
/// starts with one of `prefixes`.
///
/// ```
/// use onair::kit::commands::named;
/// assert_eq!(named("  !Hello  you there", &["!"]), Some(("Hello", "you there")));
/// assert_eq!(named("! hello", &["!"]), None);
/// ```
pub fn named<'a>(message: &'a str, prefixes: &[&str]) -> Option<(&'a str, &'a str)> {
    let text = message.trim_start();
    let after = prefixes
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix))?;
    let name_end = after.find(char::is_whitespace).unwrap_or(after.len());
    let (name, rest) = after.split_at(name_end);
    (!name.is_empty()).then(|| (name, rest.trim()))
}

/// A name as compared: lowercased per `char`, with the two common letters
/// whose lowercase differs from their case fold mapped too.
pub(crate) fn fold(name: &str) -> String {
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
    use proptest::prelude::*;

    #[test]
    fn names_fold_case_insensitively() {
        for typed in ["hello", "HELLO", "hElLo"] {
            assert_eq!(fold(typed), "hello");
        }
        assert_eq!(fold("ΣΟΦΟΣ"), fold("σοφος"));
        assert_eq!(fold("σοφοσ"), fold("σοφος"));
    }

    #[test]
    fn not_commands() {
        for message in ["", "hello", "!", "! hello", "x !hello"] {
            assert_eq!(named(message, &["!"]), None, "{message:?}");
        }
        assert_eq!(named("!!hello", &["!"]), Some(("!hello", "")));
        assert_eq!(named("!hello\u{3000}x", &["!"]), Some(("hello", "x")));
    }

    #[test]
    fn prefixes() {
        assert_eq!(named("hi there", &[""]), Some(("hi", "there")));
        assert_eq!(named("!!hi", &["!!", "！"]), Some(("hi", "")));
        assert_eq!(named("！hi", &["!!", "！"]), Some(("hi", "")));
        assert_eq!(named("!hi", &["!!", "！"]), None);
    }

    #[test]
    fn who_may_run_what() {
        for (allowed, role, may) in [
            (Allowed::Anyone, Role::Listener, true),
            (Allowed::Managers, Role::Listener, false),
            (Allowed::Managers, Role::Manager, true),
            (Allowed::Managers, Role::Dj, true),
            (Allowed::Dj, Role::Manager, false),
            (Allowed::Dj, Role::Dj, true),
        ] {
            assert_eq!(allowed.permits(role), may, "{allowed} {role}");
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
        assert_eq!(
            named("!say   \"a  b\"  c  ", &["!"]).map(|n| n.1),
            Some("\"a  b\"  c")
        );
    }

    proptest! {
        #[test]
        fn never_panics_and_args_hold_only_text_from_the_message(message in "\\PC{0,60}") {
            if let Some((_, rest)) = named(&message, &["!"]) {
                for arg in split_args(rest) {
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
