//! HTTP values in and out, for whatever client the driver uses: the
//! [`HttpRequest`] to send, the [`BaseUrl`] it is built under, the response
//! headers given back ([`Header`]), and the percent-encodings of the wire.
//!
//! A request destructures into plain parts (`let HttpRequest { method, url,
//! headers, body, .. } = request;`); its secrets stay zeroized through their
//! own types ([`HeaderValue`], [`Body`]), and its `Debug` redacts them.
//! Response headers go in as any iterator of (name, value) pairs whose parts
//! are bytes or strings: `&[(&str, &str)]`, a `Vec<(String, String)>`,
//! reqwest's or hyper's `&http::HeaderMap`, C's (pointer, length) pairs.
//!
//! With the `http` feature, [`HttpRequest`] converts into
//! `http::Request<Vec<u8>>` and `http::Request<bytes::Bytes>`.
//!
//! ```
//! use onair::BaseUrl;
//!
//! let base = BaseUrl::new("http://127.0.0.1:8080/")?;
//! assert_eq!(base.as_str(), "http://127.0.0.1:8080");
//! assert!(BaseUrl::new("http://127.0.0.1:").is_err()); // an empty port
//! # Ok::<(), onair::InvalidBaseUrl>(())
//! ```

use std::fmt;
use std::ops::Deref;

use zeroize::Zeroizing;

use crate::proto::endpoint::{Endpoint, Method};

pub(crate) const FORM: &str = "application/x-www-form-urlencoded";
pub(crate) const JSON: &str = "application/json";

// ---------------------------------------------------------------------------
// Values that must not hold control characters
// ---------------------------------------------------------------------------

/// A value refused before it could go into a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub(crate) enum ValueError {
    /// A value that must not be empty was empty.
    #[error("{field} must not be empty")]
    Empty {
        /// Which value (`access_token`, `code`, …).
        field: &'static str,
    },
    /// A value holds CR, LF or another control character.
    #[error("{field} holds a control character (CR, LF, …); refused to prevent header injection")]
    ControlCharacter {
        /// Which value (`access_token`, `code`, …).
        field: &'static str,
    },
}

/// Refuses an empty value or one with a control character, so no driver
/// that concatenates can be tricked into header injection.
pub(crate) fn check_value(field: &'static str, value: &str) -> Result<(), ValueError> {
    if value.is_empty() {
        return Err(ValueError::Empty { field });
    }
    if value.chars().any(char::is_control) {
        return Err(ValueError::ControlCharacter { field });
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Base URL
// ---------------------------------------------------------------------------

/// Why a base URL was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("invalid base URL: {0}")]
pub struct InvalidBaseUrl(pub &'static str);

/// The region's base address, e.g. `https://api.example.test` (spec 1: one
/// per region; the app uses the one it is registered in). Trailing slashes
/// are dropped; a path prefix is kept.
///
/// ```
/// use onair::BaseUrl;
///
/// assert_eq!(BaseUrl::new("https://x.test/gw//")?.as_str(), "https://x.test/gw");
/// assert!(BaseUrl::new("http://[::1]:8080").is_ok());
/// assert!(BaseUrl::new("x.test").is_err());
/// assert!(BaseUrl::new("https://x.test/?a=1").is_err());
/// assert!(BaseUrl::new("http://127.0.0.1:").is_err());
/// assert!(BaseUrl::new("http://:8080").is_err());
/// assert!(BaseUrl::new("http://user@x.test").is_err());
/// # Ok::<(), onair::InvalidBaseUrl>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BaseUrl(String);

impl BaseUrl {
    /// Checks and normalizes a base URL: `http://` or `https://`, a host, an
    /// optional port of 1 to 65535, an optional path; no user info, query,
    /// fragment, whitespace or control characters.
    pub fn new(url: &str) -> Result<Self, InvalidBaseUrl> {
        let trimmed = url.trim_end_matches('/');
        let scheme_len = ["https://", "http://"].into_iter().find_map(|scheme| {
            let head = trimmed.get(..scheme.len())?;
            head.eq_ignore_ascii_case(scheme).then_some(scheme.len())
        });
        let Some(rest) = scheme_len.and_then(|n| trimmed.get(n..)) else {
            return Err(InvalidBaseUrl("must start with http:// or https://"));
        };
        if trimmed.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(InvalidBaseUrl("holds whitespace or a control character"));
        }
        if trimmed.contains(['?', '#']) {
            return Err(InvalidBaseUrl("must not have a query or a fragment"));
        }
        let authority = rest.split('/').next().unwrap_or("");
        if authority.contains('@') {
            return Err(InvalidBaseUrl("must not hold user info (name@)"));
        }
        let (host, port) = split_authority(authority)?;
        if host.is_empty() {
            return Err(InvalidBaseUrl("has no host"));
        }
        if let Some(port) = port {
            let valid = !port.is_empty()
                && port.len() <= 5
                && port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p));
            if !valid {
                return Err(InvalidBaseUrl(
                    "has a port that is not a number from 1 to 65535",
                ));
            }
        }
        Ok(BaseUrl(trimmed.to_owned()))
    }

    /// The normalized base, without a trailing slash.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn join(&self, path: &str) -> String {
        let mut url = String::with_capacity(self.0.len() + path.len());
        url.push_str(&self.0);
        url.push_str(path);
        url
    }
}

/// Host and port (`None` when there is no colon) of `host[:port]` or
/// `[v6]:port`.
fn split_authority(authority: &str) -> Result<(&str, Option<&str>), InvalidBaseUrl> {
    if let Some(v6) = authority.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err(InvalidBaseUrl("has an IPv6 host without its closing ]"));
        };
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(InvalidBaseUrl("has junk after the IPv6 host")),
            },
        };
    }
    Ok(match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for BaseUrl {
    type Err = InvalidBaseUrl;

    fn from_str(s: &str) -> Result<Self, InvalidBaseUrl> {
        BaseUrl::new(s)
    }
}

// ---------------------------------------------------------------------------
// The request value
// ---------------------------------------------------------------------------

/// A request header's value. Zeroized when dropped; its `Debug` shows
/// `<redacted>` for credentials (`Authorization`). Read it as a `&str`.
#[derive(Clone, PartialEq, Eq)]
pub struct HeaderValue {
    text: Zeroizing<String>,
    sensitive: bool,
}

impl HeaderValue {
    fn new(text: String, sensitive: bool) -> Self {
        HeaderValue {
            text: Zeroizing::new(text),
            sensitive,
        }
    }

    /// The value to send.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it holds a credential (never log it).
    pub fn is_sensitive(&self) -> bool {
        self.sensitive
    }
}

impl Deref for HeaderValue {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for HeaderValue {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl AsRef<[u8]> for HeaderValue {
    fn as_ref(&self) -> &[u8] {
        self.text.as_bytes()
    }
}

impl fmt::Debug for HeaderValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sensitive {
            f.write_str("<redacted>")
        } else {
            fmt::Debug::fmt(self.text.as_str(), f)
        }
    }
}

/// A request body. Zeroized when dropped (a token form carries secrets);
/// its `Debug` shows only its length. Read it as `&[u8]`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Body(Zeroizing<Vec<u8>>);

impl Body {
    /// The bytes to send.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Moves the bytes out (the caller's copy is no longer zeroized by onair).
    pub fn into_vec(mut self) -> Vec<u8> {
        std::mem::take(&mut *self.0)
    }
}

impl Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Body(<{} bytes>)", self.0.len())
    }
}

/// One HTTP request to send, as a value: destructure it into its parts.
///
/// Its `Debug` shows secrets (the credentials of `Authorization` headers and
/// the `code`, `token`, `refresh_token` and `client_secret` form fields) as
/// `<redacted>`; [`HttpRequest::redacted`] gives the same view as data. The
/// header values and the body are zeroized when dropped.
///
/// ```
/// use onair::{BaseUrl, HttpRequest, Secret, api};
///
/// let request = api::live(&BaseUrl::new("http://127.0.0.1:8080")?, &Secret::new("at"))?;
/// let HttpRequest { method, url, headers, body, .. } = request;
/// assert_eq!((method.as_str(), url.as_str()), ("GET", "http://127.0.0.1:8080/v1/live"));
/// for (name, value) in &headers {
///     // e.g. reqwest: builder = builder.header(*name, value.as_str());
///     assert!(!name.is_empty() && !value.is_empty());
/// }
/// assert!(body.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpRequest {
    /// The endpoint the request is for.
    pub endpoint: Endpoint,
    /// The method (the endpoint's).
    pub method: Method,
    /// The full URL, query included.
    pub url: String,
    /// Header names and values, in the order to send.
    pub headers: Vec<(&'static str, HeaderValue)>,
    /// The body; empty when there is none.
    pub body: Body,
}

impl HttpRequest {
    /// A request for `endpoint` under `base`, with `suffix` (a query)
    /// after the endpoint's path.
    pub(crate) fn to(endpoint: Endpoint, base: &BaseUrl, suffix: &str) -> Self {
        let mut url = base.join(endpoint.path());
        url.push_str(suffix);
        HttpRequest {
            endpoint,
            method: endpoint.method(),
            url,
            headers: Vec::new(),
            body: Body::default(),
        }
    }

    pub(crate) fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers
            .push((name, HeaderValue::new(value.into(), false)));
        self
    }

    pub(crate) fn with_credential(mut self, value: String) -> Self {
        self.headers
            .push(("Authorization", HeaderValue::new(value, true)));
        self
    }

    pub(crate) fn with_body(mut self, body: Vec<u8>) -> Self {
        self.body = Body(Zeroizing::new(body));
        self
    }

    /// The first value of a header, matched case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The request with secrets replaced by `<redacted>`, for logs and
    /// snapshots. The body is shown as text (lossy UTF-8).
    pub fn redacted(&self) -> RedactedRequest {
        let headers = self
            .headers
            .iter()
            .map(|(name, value)| {
                let shown = if value.is_sensitive() {
                    match value.split_once(' ') {
                        Some((scheme, _)) => format!("{scheme} <redacted>"),
                        None => "<redacted>".to_owned(),
                    }
                } else {
                    value.as_str().to_owned()
                };
                ((*name).to_owned(), shown)
            })
            .collect();
        let text = String::from_utf8_lossy(&self.body);
        let is_form = self
            .header("content-type")
            .is_some_and(|ct| ct.starts_with(FORM));
        let body = if is_form {
            redact_form(&text)
        } else {
            text.into_owned()
        };
        RedactedRequest {
            method: self.method.as_str(),
            url: self.url.clone(),
            headers,
            body,
        }
    }

    /// The request as an `http::Request` (feature `http`), e.g. for hyper.
    /// `Authorization` is marked sensitive. Fails only if a value is not a
    /// valid header value, which onair's builders never produce.
    #[cfg(feature = "http")]
    pub fn into_http(self) -> Result<::http::Request<Vec<u8>>, ::http::Error> {
        let HttpRequest {
            method,
            url,
            headers,
            body,
            ..
        } = self;
        let mut builder = ::http::Request::builder()
            .method(match method {
                Method::Get => ::http::Method::GET,
                Method::Post => ::http::Method::POST,
            })
            .uri(url.as_str());
        for (name, value) in &headers {
            let mut v = ::http::HeaderValue::from_str(value.as_str())?;
            v.set_sensitive(value.is_sensitive());
            builder = builder.header(*name, v);
        }
        builder.body(body.into_vec())
    }

    /// The request as an `http::Request<bytes::Bytes>` (feature `http`).
    #[cfg(feature = "http")]
    pub fn into_http_bytes(self) -> Result<::http::Request<bytes::Bytes>, ::http::Error> {
        Ok(self.into_http()?.map(bytes::Bytes::from))
    }
}

#[cfg(feature = "http")]
impl TryFrom<HttpRequest> for ::http::Request<Vec<u8>> {
    type Error = ::http::Error;

    fn try_from(request: HttpRequest) -> Result<Self, ::http::Error> {
        request.into_http()
    }
}

#[cfg(feature = "http")]
impl TryFrom<HttpRequest> for ::http::Request<bytes::Bytes> {
    type Error = ::http::Error;

    fn try_from(request: HttpRequest) -> Result<Self, ::http::Error> {
        request.into_http_bytes()
    }
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.redacted();
        f.debug_struct("HttpRequest")
            .field("endpoint", &self.endpoint)
            .field("method", &r.method)
            .field("url", &r.url)
            .field("headers", &r.headers)
            .field("body", &r.body)
            .finish()
    }
}

/// An [`HttpRequest`] with its secrets replaced by `<redacted>`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RedactedRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The full URL.
    pub url: String,
    /// Headers, credentials redacted.
    pub headers: Vec<(String, String)>,
    /// The body as text, secret form fields redacted.
    pub body: String,
}

/// Replaces the values of secret form fields with `<redacted>`.
fn redact_form(body: &str) -> String {
    const SECRET_FIELDS: [&str; 5] = [
        "code",
        "token",
        "refresh_token",
        "client_secret",
        "access_token",
    ];
    body.split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if SECRET_FIELDS.contains(&key) => format!("{key}=<redacted>"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

// ---------------------------------------------------------------------------
// Response headers
// ---------------------------------------------------------------------------

/// One response header: a name and a value, as bytes or strings.
///
/// Implemented for every pair whose parts are `AsRef<[u8]>` (`(&str, &str)`,
/// `(String, String)`, `(&[u8], &[u8])`, `(&HeaderName, &HeaderValue)` of the
/// `http` crate, …) and for references to them, so a slice, a `Vec`, an
/// array or reqwest's `resp.headers()` goes in as it is.
///
/// ```
/// use onair::Header;
///
/// fn retry_after<H: Header>(headers: impl IntoIterator<Item = H>) -> Option<Vec<u8>> {
///     let mut headers = headers.into_iter();
///     let found = headers.find(|h| h.name().eq_ignore_ascii_case(b"retry-after"))?;
///     Some(found.value().to_vec())
/// }
/// let headers = [("Retry-After", "30"), ("X-RateLimit-Remaining", "0")];
/// assert_eq!(retry_after(&headers), Some(b"30".to_vec()));
/// let owned = vec![(String::from("retry-after"), String::from("5"))];
/// assert_eq!(retry_after(owned), Some(b"5".to_vec()));
/// ```
pub trait Header {
    /// The header name (any case).
    fn name(&self) -> &[u8];
    /// The header value, as received.
    fn value(&self) -> &[u8];
}

impl<N: AsRef<[u8]>, V: AsRef<[u8]>> Header for (N, V) {
    fn name(&self) -> &[u8] {
        self.0.as_ref()
    }
    fn value(&self) -> &[u8] {
        self.1.as_ref()
    }
}

impl<H: Header + ?Sized> Header for &H {
    fn name(&self) -> &[u8] {
        (**self).name()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
}

/// The value of the first header named `name` (ASCII case-insensitive).
///
/// The first one wins when a name repeats, so a later duplicate cannot
/// override what the gateway sent first.
#[cfg(test)]
pub(crate) fn find<'h, H: Header>(headers: &'h [H], name: &str) -> Option<&'h [u8]> {
    headers
        .iter()
        .find(|h| h.name().eq_ignore_ascii_case(name.as_bytes()))
        .map(Header::value)
}

/// A header value with optional whitespace (space, tab) trimmed at both ends.
pub(crate) fn trim_ows(value: &[u8]) -> &[u8] {
    let start = value
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    value.get(start..end).unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Percent-encoding
// ---------------------------------------------------------------------------

/// One name or value as `application/x-www-form-urlencoded` (WHATWG: a
/// space is `+`; ASCII letters, digits and `*-._` stay).
pub(crate) fn form_component(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The characters a query component keeps as they are: RFC 3986's
/// unreserved set (`A-Z a-z 0-9 - . _ ~`); everything else is `%XX`.
const QUERY_KEEPS: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One query component, percent-encoded (a space is `%20`).
pub(crate) fn query_component(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, QUERY_KEEPS).to_string()
}

/// Joins form fields as `name=value&…`, each part form-urlencoded.
pub(crate) fn form_body(fields: &[(&str, &str)]) -> Vec<u8> {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive_and_first_wins() {
        let headers = [("retry-after", "1"), ("RETRY-AFTER", "2")];
        assert_eq!(find(&headers, "Retry-After"), Some(&b"1"[..]));
        let owned = vec![("A".to_owned(), "x".to_owned())];
        assert_eq!(find(&owned, "a"), Some(&b"x"[..]));
        let bytes: [(&[u8], &[u8]); 1] = [(b"a", b"\xff")];
        assert_eq!(find(&bytes, "A"), Some(&b"\xff"[..]));
    }

    #[test]
    fn trims_optional_whitespace() {
        assert_eq!(trim_ows(b" \t 30 \t"), b"30");
        assert_eq!(trim_ows(b"   "), b"");
        assert_eq!(trim_ows(b""), b"");
        assert_eq!(trim_ows(b"a b"), b"a b");
    }

    #[test]
    fn base_url_needs_a_usable_authority() {
        for good in [
            "http://127.0.0.1:8080",
            "https://api.example.test/gw/",
            "http://[::1]",
            "http://[::1]:1",
            "HTTPS://X.TEST:65535",
        ] {
            assert!(BaseUrl::new(good).is_ok(), "{good}");
        }
        for bad in [
            "http://127.0.0.1:",
            "http://127.0.0.1:0",
            "http://127.0.0.1:65536",
            "http://127.0.0.1:80a",
            "http://:80",
            "http://",
            "http:///v1",
            "http://[::1",
            "http://[::1]x",
            "http://a@b.test",
            "ftp://x.test",
            "http://x .test",
        ] {
            assert!(BaseUrl::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secrets_are_redacted_from_debug_of_every_part() {
        let request = HttpRequest::to(Endpoint::Live, &BaseUrl::new("http://h.test").unwrap(), "")
            .with_credential("Bearer tok-123".to_owned())
            .with_header("Content-Type", FORM)
            .with_body(b"token=tok-123".to_vec());
        let HttpRequest { headers, body, .. } = request.clone();
        assert!(!format!("{request:?}").contains("tok-123"));
        assert!(!format!("{headers:?}").contains("tok-123"));
        assert!(!format!("{body:?}").contains("tok-123"));
        assert_eq!(headers[0].1.as_str(), "Bearer tok-123");
        assert_eq!(body.into_vec(), b"token=tok-123");
    }

    #[cfg(feature = "http")]
    #[test]
    fn converts_into_an_http_request() {
        let request = HttpRequest::to(Endpoint::Chat, &BaseUrl::new("http://h.test").unwrap(), "")
            .with_credential("Bearer t".to_owned())
            .with_header("Content-Type", JSON)
            .with_body(b"{}".to_vec());
        let converted: ::http::Request<Vec<u8>> = request.clone().try_into().unwrap();
        assert_eq!(converted.method(), ::http::Method::POST);
        assert_eq!(converted.uri(), "http://h.test/v1/live/chat");
        assert!(converted.headers()["authorization"].is_sensitive());
        assert_eq!(converted.body(), b"{}");
        let bytes: ::http::Request<bytes::Bytes> = request.try_into().unwrap();
        assert_eq!(bytes.body().as_ref(), b"{}");
    }

    #[cfg(feature = "http")]
    #[test]
    fn takes_an_http_header_map_as_it_is() {
        let mut map = ::http::HeaderMap::new();
        map.insert("retry-after", ::http::HeaderValue::from_static("30"));
        let q = crate::proto::ratelimit::QuotaHeaders::parse(&map);
        assert!(q.retry_after_present);
    }
}
