//! Helpers shared by the wire types: string enums that keep unknown values,
//! and [`ShortText`], a wire string held inline when it is short.

use arrayvec::ArrayString;

/// Defines a string enum of the wire that keeps values it does not know as
/// `Other(String)` (never a decode error), with `from_wire`, `as_str`,
/// `Display`, and serde's `Serialize` and `Deserialize` as the plain string.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        pub enum $name {
            $( $(#[$vmeta])* #[cfg_attr(feature = "ts", ts(rename = $wire))] $variant, )*
            /// A value this version does not know, kept as sent.
            #[cfg_attr(feature = "ts", ts(untagged))]
            Other(#[cfg_attr(feature = "ts", ts(type = "string & {}"))] String),
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

        /// Any string: the known values are listed as `examples` (a value
        /// this version does not know is kept, never refused).
        #[cfg(feature = "schema")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({
                    "type": "string",
                    "examples": [$( $wire, )*],
                })
            }
        }
    };
}

pub(crate) use wire_enum;

/// Defines a closed string enum of this crate's own vocabulary (names printed
/// by `onair explain` and the bindings, never read from the wire): `as_str`,
/// `from_name`, `Display`, and serde's `Serialize` as the plain string.
macro_rules! name_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        pub enum $name { $( $(#[$vmeta])* #[cfg_attr(feature = "ts", ts(rename = $wire))] $variant, )* }

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

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                const NAMES: &[&str] = &[$( $wire, )*];
                let text = <::std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::from_name(&text)
                    .ok_or_else(|| ::serde::de::Error::unknown_variant(&text, NAMES))
            }
        }

        /// One of the names.
        #[cfg(feature = "schema")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({
                    "type": "string",
                    "enum": [$( $wire, )*],
                })
            }
        }
    };
}

pub(crate) use name_enum;

/// A serde visitor of one JSON string, turned into a value by `.0`: borrowed
/// or escaped, the text is read without an extra copy when it can be.
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

/// Reads `null` as the type's default (the service's display fields that a
/// proxy or an older server may send as `null`).
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    use serde::Deserialize;
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Reads a `T` only from a JSON object: serde's derived `Deserialize` of a
/// struct also takes an array of its fields in order, but the service's
/// payloads are objects (an array where one belongs is the wrong shape).
///
/// ```ignore
/// #[serde(deserialize_with = "crate::wire::object")]
/// pub user: User,
/// ```
pub(crate) fn object<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct ObjectVisitor<T>(std::marker::PhantomData<T>);
    impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for ObjectVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            // serde's own words for a struct: `expected struct User`.
            let name = std::any::type_name::<T>();
            write!(f, "struct {}", name.rsplit("::").next().unwrap_or(name))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(ObjectVisitor(std::marker::PhantomData))
}

/// A `T` read by [`object`] (for a whole document).
pub(crate) struct Object<T>(pub(crate) T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object(d).map(Object)
    }
}

/// A serde_json error, sorted and described for logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonFault {
    /// The text is not JSON (rather than JSON of another shape): a document
    /// of the wrong shape counts as a syntax fault when the whole text is
    /// not JSON (say, a bad object followed by trailing garbage).
    pub(crate) syntax: bool,
    /// serde_json's message, its position as a byte offset and without any
    /// value of the input (in a token response a value can be a secret):
    /// `missing field `user` at byte 41`, `invalid JSON: EOF while parsing
    /// a string at byte 66`.
    pub(crate) message: String,
    /// 1-based line and column of the fault.
    pub(crate) line: usize,
    /// See `line`.
    pub(crate) column: usize,
}

impl JsonFault {
    /// Describes `error`, met reading `text`.
    pub(crate) fn of(text: &[u8], error: &serde_json::Error) -> JsonFault {
        if error.is_data() {
            if let Err(syntax) = serde_json::from_slice::<serde::de::IgnoredAny>(text) {
                return JsonFault::of(text, &syntax);
            }
        }
        let full = error.to_string();
        let what = match full.rfind(" at line ") {
            Some(at) => &full[..at],
            None => &full,
        };
        let syntax = !error.is_data();
        let line_start: usize = text
            .split_inclusive(|&b| b == b'\n')
            .take(error.line().saturating_sub(1))
            .map(<[u8]>::len)
            .sum();
        // serde_json's column is that of the last byte it read: the offset
        // just past it.
        let at = (line_start + error.column()).min(text.len());
        JsonFault {
            syntax,
            message: format!(
                "{}{} at byte {at}",
                if syntax { "invalid JSON: " } else { "" },
                without_values(what)
            ),
            line: error.line(),
            column: error.column(),
        }
    }
}

/// Why a stored document (the token file, kit state) was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoredRefusal {
    /// Not JSON of the expected shape, at this 1-based line and column.
    Json { line: usize, column: usize },
    /// `format` is missing or names another kind of document.
    UnknownFormat,
    /// `version` is missing.
    MissingVersion,
    /// A `version` this build does not read.
    UnsupportedVersion(u64),
}

/// Reads a stored document: its `format` and `version` are checked first
/// (a file from a newer onair is refused by its version, not by whatever
/// field changed), then the whole document is read as a `T`.
pub(crate) fn read_stored<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    format: &str,
    version: u32,
) -> Result<T, StoredRefusal> {
    #[derive(serde::Deserialize)]
    struct Marker {
        #[serde(default)]
        format: Option<String>,
        #[serde(default)]
        version: Option<u64>,
    }
    let refused = |e: serde_json::Error| StoredRefusal::Json {
        line: e.line(),
        column: e.column(),
    };
    let marker: Marker = serde_json::from_slice(bytes).map_err(refused)?;
    if marker.format.as_deref() != Some(format) {
        return Err(StoredRefusal::UnknownFormat);
    }
    match marker.version {
        Some(v) if v == u64::from(version) => {}
        Some(found) => return Err(StoredRefusal::UnsupportedVersion(found)),
        None => return Err(StoredRefusal::MissingVersion),
    }
    serde_json::from_slice(bytes).map_err(refused)
}

/// serde's `invalid type: string "x", expected …` without the value:
/// `invalid type: string, expected …` (the value may be a secret).
pub(crate) fn without_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    for (open, close) in [(" \"", "\", expected"), (" `", "`, expected")] {
        if let (Some(a), Some(b)) = (rest.find(open), rest.rfind(close)) {
            if a < b {
                out.push_str(&rest[..a]);
                rest = &rest[b + close.len() - ", expected".len()..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

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
