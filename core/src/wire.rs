//! Helpers shared by the wire types: string enums that keep unknown values.

/// Defines a string enum of the wire that keeps values it does not know as
/// `Other(String)` (never a decode error), with `from_wire`, `as_str`,
/// `Display` and serde impls that read and write the plain string.
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

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_str($crate::wire::StrVisitor(Self::from_wire))
            }
        }
    };
}

pub(crate) use wire_enum;

/// Defines a closed string enum of this crate's own vocabulary (names printed
/// by `onair explain`, never read from the wire): `as_str`, `Display` and a
/// serde `Serialize` that writes the plain string.
macro_rules! name_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $( $(#[$vmeta])* $variant, )* }

        impl $name {
            /// The snake_case name `onair explain` prints.
            pub fn as_str(self) -> &'static str {
                match self { $( Self::$variant => $wire, )* }
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
    };
}

pub(crate) use name_enum;

/// A serde visitor that maps a string through a function, borrowing when it can.
pub(crate) struct StrVisitor<F>(pub(crate) F);

impl<T, F: FnOnce(&str) -> T> serde::de::Visitor<'_> for StrVisitor<F> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(v))
    }
}
