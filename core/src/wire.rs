//! Helpers shared by the wire types: the JSON reader ([`json`]), string
//! enums that keep unknown values, and [`ShortText`], a wire string held
//! inline when it is short.

use arrayvec::ArrayString;

mod decimal;
pub(crate) mod json;
pub(crate) mod write;

/// Defines a string enum of the wire that keeps values it does not know as
/// `Other(String)` (never a decode error), with `from_wire`, `as_str`,
/// `Display`, and a serde `Serialize` and a [`write::WriteJson`] that write
/// the plain string.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this version does not know, kept as sent.
            Other(String),
        }

        impl $name {
            /// Reads the wire string; unknown values become `Other`.
            pub fn from_wire(wire: &str) -> Self {
                match wire {
                    $( $wire => Self::$variant, )*
                    other => Self::Other(other.to_owned()),
                }
            }

            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $wire, )*
                    Self::Other(other) => other,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl $crate::wire::write::WriteJson for $name {
            fn write_json(&self, out: &mut $crate::wire::write::JsonOut) {
                out.str(self.as_str());
            }
        }
    };
}

pub(crate) use wire_enum;

/// Defines a closed string enum of this crate's own vocabulary (names printed
/// by `onair explain` and the bindings, never read from the wire): `as_str`,
/// `from_name`, `Display`, and a serde `Serialize` and a
/// [`write::WriteJson`] that write the plain string.
macro_rules! name_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $( $(#[$vmeta])* $variant, )* }

        impl $name {
            /// The snake_case name `onair explain` and the bindings print.
            pub fn as_str(self) -> &'static str {
                match self { $( Self::$variant => $wire, )* }
            }

            /// The value [`as_str`](Self::as_str) names; `None` for any other text.
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $( $wire => Some(Self::$variant), )* _ => None }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl $crate::wire::write::WriteJson for $name {
            fn write_json(&self, out: &mut $crate::wire::write::JsonOut) {
                out.str(self.as_str());
            }
        }
    };
}

pub(crate) use name_enum;

/// Bytes a [`ShortText`] holds inline: a timestamp to the millisecond
/// (`2024-11-22T04:33:20.123Z`, the service's form) or a frame id fits, and
/// the whole value stays 32 bytes.
const INLINE: usize = 24;

/// A wire string that is usually short (timestamps, frame ids), held inline
/// when it fits so that decoding an event does not allocate for it; longer
/// values go to the heap. Equality, order and hash are those of the text.
#[derive(Debug, Clone)]
pub(crate) enum ShortText {
    Inline(ArrayString<INLINE>),
    Heap(Box<str>),
}

impl ShortText {
    pub(crate) fn new(text: &str) -> Self {
        match ArrayString::from(text) {
            Ok(inline) => ShortText::Inline(inline),
            Err(_) => ShortText::Heap(text.into()),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            ShortText::Inline(text) => text,
            ShortText::Heap(text) => text,
        }
    }
}

impl PartialEq for ShortText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ShortText {}

impl PartialOrd for ShortText {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ShortText {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for ShortText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

#[cfg(test)]
mod short_text_tests {
    use super::ShortText;

    #[test]
    fn short_values_stay_inline_long_ones_go_to_the_heap() {
        assert_eq!(std::mem::size_of::<ShortText>(), 32);
        for short in ["2024-11-22T04:33:20.123Z", "1732250000000-17", "", "한글🎧"] {
            assert!(matches!(ShortText::new(short), ShortText::Inline(_)));
            assert_eq!(ShortText::new(short).as_str(), short);
        }
        let long = "2024-11-22T04:33:20.123456Z";
        assert!(matches!(ShortText::new(long), ShortText::Heap(_)));
        assert_eq!(ShortText::new(long).as_str(), long);
    }

    #[test]
    fn compares_as_its_text_whatever_the_storage() {
        let long = "y".repeat(60);
        assert_eq!(ShortText::new("a"), ShortText::new("a"));
        assert!(ShortText::new("a") < ShortText::new(&long));
        assert!(ShortText::new(&long) > ShortText::new("x"));
    }
}
