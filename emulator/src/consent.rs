//! The emulator's own consent page, `GET /oauth/authorize` (the spec shows no
//! consent endpoint: "its path and parameters" are not given). It plays the
//! DJ saying yes at once: it mints a consent code exactly as
//! `POST /_emulator/consent` does and sends the browser back to the app with
//! `302 Found`, so a plain HTTP client that follows redirects can run the
//! whole authorization-code flow.
//!
//! Parameters (query): `client_id` (required, a registered app),
//! `redirect_uri` (optional; when given it must equal the app's registered
//! one), `state` (required, echoed exactly), `scope` (optional; default every
//! permission), `dj` (optional: an existing DJ, or a new one created with its
//! own broadcast state; default the first DJ), `response_type` (accepted and
//! ignored).
//!
//! Errors that concern the app or the redirect URI are HTML pages with 400,
//! never a redirect to an unverified URI. A scope naming no permission or an
//! unknown one goes back to the (verified) redirect URI as
//! `error=invalid_scope&state=…` (RFC 6749 4.1.2.1; the spec says
//! `invalid_scope` comes from this step). With `Accept: text/html` and no
//! `dj`, the page lists the DJs as links instead of answering for the first.
//!
//! ```
//! use onair_emulator::consent::redirect_to;
//! assert_eq!(
//!     redirect_to("http://127.0.0.1/cb", &[("code", "c1"), ("state", "a b&c")]),
//!     "http://127.0.0.1/cb?code=c1&state=a%20b%26c"
//! );
//! assert_eq!(
//!     redirect_to("http://x/cb?app=1#top", &[("code", "c1")]),
//!     "http://x/cb?app=1&code=c1"
//! );
//! ```

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::oauth;
use crate::reply::{Reply, ReplyBody};
use crate::scope::{Perm, Scope};
use crate::world::World;

/// The consent page's path.
pub const PATH: &str = crate::paths::AUTHORIZE;

/// Everything but RFC 3986's unreserved characters is escaped, so a value
/// decodes the same by percent-decoding and by form decoding.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `uri` with `params` appended to its query (`?` or `&` as needed; a
/// fragment, which a redirect URI must not have, is left out).
pub fn redirect_to(uri: &str, params: &[(&str, &str)]) -> String {
    let base = uri.split('#').next().unwrap_or(uri);
    let mut out = base.to_owned();
    let sep = match base.find('?') {
        None => "?",
        Some(_) if base.ends_with('?') || base.ends_with('&') => "",
        Some(_) => "&",
    };
    out.push_str(sep);
    let pairs: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", utf8_percent_encode(v, QUERY_VALUE)))
        .collect();
    out.push_str(&pairs.join("&"));
    out
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn page(status: u16, title: &str, body_html: &str) -> Reply {
    let html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body><h1>{t}</h1>\n{body_html}\n</body></html>\n",
        t = escape(title)
    );
    Reply {
        status,
        headers: vec![("cache-control", "no-store".to_owned())],
        body: ReplyBody::Text(html, "text/html; charset=utf-8"),
    }
}

fn refuse(message: &str) -> Reply {
    page(
        400,
        "Consent refused",
        &format!(
            "<p>{}</p><p>Nothing was sent to the app: its redirect URI is \
             not trusted for this request.</p>",
            escape(message)
        ),
    )
}

fn found(location: String) -> Reply {
    let link = escape(&location);
    let mut reply = page(
        302,
        "Found",
        &format!("<p><a href=\"{link}\">{link}</a></p>"),
    );
    reply.headers.push(("location", location));
    reply
}

fn wants_html(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',')
            .any(|t| t.split(';').next().unwrap_or("").trim() == "text/html")
    })
}

/// The DJ chooser: one link per DJ (the same request with `dj=<name>`).
fn chooser(w: &World, pairs: &[(String, String)]) -> Reply {
    let items: Vec<String> = w
        .djs
        .iter()
        .map(|d| {
            let query: String = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs.iter().filter(|(k, _)| k != "dj"))
                .append_pair("dj", &d.name)
                .finish();
            format!(
                "<li><a href=\"{}?{}\">{}</a> ({})</li>",
                PATH,
                escape(&query),
                escape(&d.name),
                escape(&d.nickname)
            )
        })
        .collect();
    page(
        200,
        "Which DJ consents?",
        &format!(
            "<p>The emulator consents at once for the DJ you pick (add \
             <code>dj=NAME</code> to the address for a new one).</p>\n<ul>\n{}\n</ul>",
            items.join("\n")
        ),
    )
}

/// Answers `GET /oauth/authorize?…`.
pub fn authorize(
    w: &mut World,
    method: &str,
    query: Option<&str>,
    accept: Option<&str>,
    now: i64,
) -> Reply {
    if method != "GET" && method != "HEAD" {
        let mut r = page(405, "Method not allowed", "<p>Use GET.</p>");
        r.headers.push(("allow", "GET".to_owned()));
        return r;
    }
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let param = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let Some(client_id) = param("client_id") else {
        return refuse("client_id is required.");
    };
    let Some(app) = w.apps.iter().position(|a| a.client_id == client_id) else {
        return refuse(&format!("Unknown client_id {client_id:?}."));
    };
    let registered = w.apps[app].redirect_uri.clone();
    let redirect = match param("redirect_uri") {
        None => registered,
        Some(uri) if uri == registered => registered,
        Some(uri) => {
            return refuse(&format!(
                "redirect_uri {uri:?} is not the one registered for this app."
            ))
        }
    };
    if w.apps[app].suspended {
        return refuse("This app is suspended.");
    }
    let state = match param("state") {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => return refuse("state is required (it protects the app against forged answers)."),
    };
    let scope = match param("scope") {
        None => Scope::FULL,
        Some(text) => {
            let names: Vec<&str> = text.split_whitespace().collect();
            if names.is_empty() || names.iter().any(|n| Perm::from_name(n).is_none()) {
                w.log(format!("consent page: invalid_scope {text:?}"));
                return found(redirect_to(
                    &redirect,
                    &[("error", "invalid_scope"), ("state", &state)],
                ));
            }
            Scope::parse(text)
        }
    };
    let dj = match param("dj").filter(|d| !d.is_empty()) {
        Some(name) => match w.dj(Some(name)) {
            Ok(d) => d,
            Err(_) => w.add_dj(name),
        },
        None if wants_html(accept) => return chooser(w, &pairs),
        None => 0,
    };
    let code = oauth::consent(w, app, dj, scope, &redirect, now);
    let dj_name = w.djs[dj].name.clone();
    w.log(format!("consent page: dj {dj_name} said yes"));
    found(redirect_to(
        &redirect,
        &[("code", &code), ("state", &state)],
    ))
}
