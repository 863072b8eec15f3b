//! Permissions and the granted scope (spec 2.1).
//!
//! The token endpoint returns the DJ's consent as `scope`: permission names
//! separated by single spaces. [`Scope`] is that set: order does not matter,
//! duplicates collapse, and names this version does not know are kept (as
//! [`Permission::Other`]) so a bot can log them and a newer permission never
//! breaks decoding.
//!
//! ```
//! use onair::{Permission, Scope};
//!
//! let scope = Scope::parse("chat.send live.read events.chat future.thing");
//! assert!(scope.contains(&Permission::LiveRead));
//! assert!(scope.contains(&Permission::Other("future.thing".into())));
//! assert!(scope.has_any_event_permission());
//! assert_eq!(scope, Scope::parse("future.thing events.chat chat.send live.read"));
//! assert_eq!(scope.to_string(), "live.read events.chat chat.send future.thing");
//! ```

use std::fmt;
use std::str::FromStr;

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::wire::{wire_enum, StrVisitor};

wire_enum! {
    /// One permission a DJ can grant (spec 2.1, 4).
    pub enum Permission {
        /// `live.read`: GET /v1/live.
        LiveRead = "live.read",
        /// `listeners.read`: GET /v1/live/listeners.
        ListenersRead = "listeners.read",
        /// `fans.read`: GET /v1/live/fans.
        FansRead = "fans.read",
        /// `events.chat`: chat events on the stream.
        EventsChat = "events.chat",
        /// `events.presence`: presence (join) events on the stream.
        EventsPresence = "events.presence",
        /// `events.like`: like (heart) events on the stream.
        EventsLike = "events.like",
        /// `events.donation`: donation events on the stream.
        EventsDonation = "events.donation",
        /// `chat.send`: POST /v1/live/chat.
        ChatSend = "chat.send",
    }
}

impl Permission {
    /// Every permission the spec names, in the spec's order.
    pub const KNOWN: [Permission; 8] = [
        Permission::LiveRead,
        Permission::ListenersRead,
        Permission::FansRead,
        Permission::EventsChat,
        Permission::EventsPresence,
        Permission::EventsLike,
        Permission::EventsDonation,
        Permission::ChatSend,
    ];

    /// True for the four `events.*` permissions; holding any one of them opens
    /// the event stream (spec 4.6 rule 1).
    ///
    /// ```
    /// use onair::Permission;
    /// assert!(Permission::EventsLike.is_event());
    /// assert!(!Permission::ChatSend.is_event());
    /// ```
    pub fn is_event(&self) -> bool {
        matches!(
            self,
            Permission::EventsChat
                | Permission::EventsPresence
                | Permission::EventsLike
                | Permission::EventsDonation
        )
    }

    /// The bit of a known permission in [`Scope`]'s set; `None` for `Other`.
    fn bit(&self) -> Option<u8> {
        let index = match self {
            Permission::LiveRead => 0,
            Permission::ListenersRead => 1,
            Permission::FansRead => 2,
            Permission::EventsChat => 3,
            Permission::EventsPresence => 4,
            Permission::EventsLike => 5,
            Permission::EventsDonation => 6,
            Permission::ChatSend => 7,
            Permission::Other(_) => return None,
        };
        Some(1 << index)
    }
}

/// A set of permissions, as granted in a token response's `scope`.
///
/// Equality ignores order and duplicates. [`Display`](fmt::Display) and
/// serde write the wire form: known permissions in the spec's order, then the
/// unknown ones in lexicographic order, separated by single spaces.
///
/// ```
/// use onair::{Permission, Scope};
///
/// let granted: Scope = "live.read  chat.send live.read".parse().unwrap();
/// assert_eq!(granted.len(), 2);
/// let wanted = Scope::from_iter([Permission::LiveRead, Permission::FansRead]);
/// assert_eq!(wanted.difference(&granted).to_string(), "fans.read");
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    known: u8,
    /// Unknown names (sorted, distinct).
    other: BTreeSet<String>,
}

impl Scope {
    /// The empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the wire string. Names are split on whitespace (the spec uses
    /// single spaces; runs of spaces or tabs are tolerated), empty names are
    /// skipped, unknown names are kept. Never fails.
    pub fn parse(wire: &str) -> Self {
        wire.split_whitespace().map(Permission::from_wire).collect()
    }

    /// Adds a permission; returns false when it was already present.
    pub fn insert(&mut self, permission: Permission) -> bool {
        match permission.bit() {
            Some(bit) => {
                let fresh = self.known & bit == 0;
                self.known |= bit;
                fresh
            }
            None => match permission {
                Permission::Other(name) if !name.is_empty() => self.other.insert(name),
                _ => false,
            },
        }
    }

    /// Removes a permission; returns whether it was present.
    pub fn remove(&mut self, permission: &Permission) -> bool {
        match permission.bit() {
            Some(bit) => {
                let present = self.known & bit != 0;
                self.known &= !bit;
                present
            }
            None => self.other.remove(permission.as_str()),
        }
    }

    /// Whether the permission was granted.
    pub fn contains(&self, permission: &Permission) -> bool {
        match permission.bit() {
            Some(bit) => self.known & bit != 0,
            None => self.other.contains(permission.as_str()),
        }
    }

    /// Whether any `events.*` permission was granted, i.e. whether the event
    /// stream can open (spec 4.6 rule 1).
    pub fn has_any_event_permission(&self) -> bool {
        Permission::KNOWN
            .iter()
            .any(|p| p.is_event() && self.contains(p))
    }

    /// The permissions of `self` that `other` lacks: e.g. what a bot needs
    /// but the DJ did not grant, to name in a re-consent request.
    pub fn difference(&self, other: &Scope) -> Scope {
        Scope {
            known: self.known & !other.known,
            other: self.other.difference(&other.other).cloned().collect(),
        }
    }

    /// Whether every permission of `self` is in `other`.
    pub fn is_subset(&self, other: &Scope) -> bool {
        self.difference(other).is_empty()
    }

    /// Number of distinct permissions.
    pub fn len(&self) -> usize {
        self.known.count_ones() as usize + self.other.len()
    }

    /// Whether no permission was granted.
    pub fn is_empty(&self) -> bool {
        self.known == 0 && self.other.is_empty()
    }

    /// The permissions in wire order (known in the spec's order, then unknown
    /// ones sorted).
    pub fn iter(&self) -> impl Iterator<Item = Permission> + '_ {
        Permission::KNOWN
            .into_iter()
            .filter(|p| self.contains(p))
            .chain(
                self.other
                    .iter()
                    .map(|name| Permission::Other(name.clone())),
            )
    }

    /// The wire string (same as `to_string()`).
    pub fn to_wire(&self) -> String {
        self.to_string()
    }
}

impl FromIterator<Permission> for Scope {
    fn from_iter<I: IntoIterator<Item = Permission>>(iter: I) -> Self {
        let mut scope = Scope::new();
        for permission in iter {
            scope.insert(permission);
        }
        scope
    }
}

impl Extend<Permission> for Scope {
    fn extend<I: IntoIterator<Item = Permission>>(&mut self, iter: I) {
        for permission in iter {
            self.insert(permission);
        }
    }
}

impl FromStr for Scope {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Scope::parse(s))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let known = Permission::KNOWN.iter().filter(|p| self.contains(p));
        for name in known
            .map(Permission::as_str)
            .chain(self.other.iter().map(String::as_str))
        {
            if !first {
                f.write_str(" ")?;
            }
            f.write_str(name)?;
            first = false;
        }
        Ok(())
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Scope").field(&self.to_string()).finish()
    }
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The space-separated string of the wire.
impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor(Scope::parse))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_spec_name_round_trips() {
        for p in Permission::KNOWN {
            assert_eq!(Permission::from_wire(p.as_str()), p);
            let scope = Scope::parse(p.as_str());
            assert!(scope.contains(&p));
            assert_eq!(scope.to_string(), p.as_str());
        }
        let all = Scope::parse(
            "chat.send events.donation events.like events.presence events.chat \
             fans.read listeners.read live.read",
        );
        assert_eq!(all.len(), 8);
        assert_eq!(
            all.to_wire(),
            "live.read listeners.read fans.read events.chat events.presence \
             events.like events.donation chat.send"
        );
    }

    #[test]
    fn unknown_names_are_kept_and_sorted() {
        let s = Scope::parse("zeta.write live.read alpha.read");
        assert!(s.contains(&Permission::Other("zeta.write".into())));
        assert_eq!(s.to_string(), "live.read alpha.read zeta.write");
        assert!(!s.has_any_event_permission());
    }

    #[test]
    fn empty_and_odd_spacing() {
        assert!(Scope::parse("").is_empty());
        assert!(Scope::parse("   ").is_empty());
        assert_eq!(Scope::parse(" live.read\t chat.send ").len(), 2);
        // Case matters: the names are exact.
        assert!(!Scope::parse("LIVE.READ").contains(&Permission::LiveRead));
    }

    #[test]
    fn insert_remove_difference() {
        let mut s = Scope::new();
        assert!(s.insert(Permission::EventsChat));
        assert!(!s.insert(Permission::EventsChat));
        assert!(!s.insert(Permission::Other(String::new())));
        assert!(s.insert(Permission::Other("x".into())));
        assert!(s.has_any_event_permission());
        assert!(s.remove(&Permission::Other("x".into())));
        assert!(s.remove(&Permission::EventsChat));
        assert!(!s.remove(&Permission::EventsChat));
        assert!(s.is_empty());
        let need = Scope::parse("live.read chat.send new.one");
        let have = Scope::parse("chat.send");
        assert_eq!(need.difference(&have).to_string(), "live.read new.one");
        assert!(have.is_subset(&need));
        assert!(!need.is_subset(&have));
    }

    #[test]
    fn serde_writes_the_wire_string() {
        let s = Scope::parse("chat.send live.read");
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#""live.read chat.send""#
        );
        assert_eq!(
            serde_json::to_string(&Permission::FansRead).unwrap(),
            r#""fans.read""#
        );
    }

    proptest! {
        #[test]
        fn order_insensitive_and_round_trips(names in proptest::collection::vec(
            prop_oneof![
                proptest::sample::select(Permission::KNOWN.iter().map(|p| p.as_str().to_owned()).collect::<Vec<_>>()),
                "[a-z.]{1,8}",
            ], 0..10)) {
            let forward = Scope::parse(&names.join(" "));
            let mut reversed = names.clone();
            reversed.reverse();
            prop_assert_eq!(&forward, &Scope::parse(&reversed.join("  ")));
            prop_assert_eq!(&Scope::parse(&forward.to_wire()), &forward);
            for n in &names {
                prop_assert!(forward.contains(&Permission::from_wire(n)));
            }
        }

        /// The sorted `Vec` behaves as the set it stands for (a `BTreeSet`).
        #[test]
        fn unknown_names_behave_as_a_set(ops in proptest::collection::vec(
            (any::<bool>(), "[a-c]{1,2}"), 0..40), probe in "[a-c]{1,2}") {
            let mut scope = Scope::new();
            let mut model = std::collections::BTreeSet::new();
            for (add, name) in ops {
                let permission = Permission::Other(name.clone());
                if add {
                    prop_assert_eq!(scope.insert(permission), model.insert(name));
                } else {
                    prop_assert_eq!(scope.remove(&permission), model.remove(&name));
                }
                prop_assert_eq!(scope.len(), model.len());
            }
            let names: Vec<String> = scope.iter().map(|p| p.as_str().to_owned()).collect();
            prop_assert_eq!(names, model.iter().cloned().collect::<Vec<_>>());
            let other = Scope::parse(&probe);
            let expected: Vec<&str> = model.iter().map(String::as_str).filter(|n| *n != probe).collect();
            prop_assert_eq!(scope.difference(&other).to_wire(), expected.join(" "));
        }

        #[test]
        fn parse_never_panics(s in "\\PC*") {
            let scope = Scope::parse(&s);
            prop_assert_eq!(Scope::parse(&scope.to_wire()), scope);
        }
    }
}
