//! OAuth (spec 3.1, 3.2, 4.1, 4.2, 5, 7.4): consent codes, token issue and
//! refresh with rotation, the theft signal on a reused code, revocation,
//! client authentication (Basic beats form), Bearer checks for bot endpoints
//! (401 without detailCode; `OAPI_MNGR_0203` within a minute of revocation),
//! consent narrowing and integration disconnect.

use base64::Engine;
use serde::Serialize;

use crate::reply::Reply;
use crate::scope::Scope;
use crate::world::{Access, ApiError, Code, Refresh, World};

/// A request's form fields (application/x-www-form-urlencoded), decoded.
pub type Form = Vec<(String, String)>;

fn field<'a>(form: &'a Form, name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// One form-urlencoded value (RFC 6749 2.3.1): `+` is a space, `%XX` a byte;
/// a bad escape stays as it is.
fn form_value(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// Whether `s` is a UUID in its 8-4-4-4-12 hex form.
pub fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The client credentials presented (spec 5.2): Basic wins, then form fields.
fn presented(authorization: Option<&str>, form: &Form) -> Result<(String, String), Reply> {
    let bad = |why: &str| Reply::oauth_error(401, "invalid_client", why);
    match authorization {
        Some(h) => {
            let Some(b64) = h
                .strip_prefix("Basic ")
                .or_else(|| h.strip_prefix("basic "))
            else {
                return Err(bad("Authorization must be Basic for this endpoint"));
            };
            let raw = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|_| bad("malformed Basic credentials"))?;
            let text = String::from_utf8(raw).map_err(|_| bad("malformed Basic credentials"))?;
            let Some((id, secret)) = text.split_once(':') else {
                return Err(bad("malformed Basic credentials"));
            };
            // RFC 6749 2.3.1: both parts are form-urlencoded before encoding.
            Ok((form_value(id), form_value(secret)))
        }
        None => match (field(form, "client_id"), field(form, "client_secret")) {
            (Some(id), Some(secret)) => Ok((id.to_owned(), secret.to_owned())),
            _ => Err(bad("client authentication missing")),
        },
    }
}

/// The registered app whose client id a token request presents (whether or
/// not its secret is right): what the request log names.
pub fn presented_app(w: &World, authorization: Option<&str>, form: &Form) -> Option<usize> {
    let (id, _) = presented(authorization, form).ok()?;
    w.apps.iter().position(|a| a.client_id == id)
}

/// Client authentication (spec 5.2): Basic wins, then form fields; returns the app index.
fn client(w: &World, authorization: Option<&str>, form: &Form) -> Result<usize, Reply> {
    let bad = |why: &str| Reply::oauth_error(401, "invalid_client", why);
    let (id, secret) = presented(authorization, form)?;
    if !is_uuid(&id) {
        return Err(bad("client_id must be a UUID"));
    }
    let app = w
        .apps
        .iter()
        .position(|a| a.client_id == id && a.client_secret == secret)
        .ok_or_else(|| bad("client authentication failed"))?;
    if w.apps[app].suspended {
        return Err(bad("the app is suspended"));
    }
    Ok(app)
}

/// The DJ consents (control API shortcut for the unspecified consent screen):
/// sets the integration's consent to `scope` and issues a 60 s single-use code.
pub fn consent(
    w: &mut World,
    app: usize,
    dj: usize,
    scope: Scope,
    redirect_uri: &str,
    now: i64,
) -> String {
    let integration = w.integration(app, dj);
    w.integrations[integration].consent = Some(scope);
    let code = w.rng.token("code_", 2);
    w.codes.insert(
        code.clone(),
        Code {
            integration,
            redirect_uri: redirect_uri.to_owned(),
            expires_at: now + w.cfg.code_ttl_ms,
            used: false,
        },
    );
    let id = w.integrations[integration].id.clone();
    let valid = crate::clock::real_time(w.cfg.code_ttl_ms, w.clock.speed());
    w.log(format!(
        "consent: {id} scope \"{scope}\" (code valid {valid})"
    ));
    code
}

/// A token response (spec 4.1), fields in the spec's order.
#[derive(Debug, Serialize)]
struct TokenPair<'a> {
    access_token: &'a str,
    token_type: &'a str,
    expires_in: i64,
    refresh_token: &'a str,
    scope: String,
}

fn issue(w: &mut World, integration: usize, now: i64) -> Reply {
    let scope = w.integrations[integration].consent.unwrap_or_default();
    let access = w.rng.token("at_", 3);
    let refresh = w.rng.token("rt_", 3);
    w.access.insert(
        access.clone(),
        Access {
            integration,
            scope,
            expires_at: now + w.cfg.access_ttl_ms,
            revoked_at: None,
        },
    );
    w.refresh.insert(
        refresh.clone(),
        Refresh {
            integration,
            expires_at: now + w.cfg.refresh_ttl_ms,
            revoked_at: None,
        },
    );
    Reply::json(
        200,
        &TokenPair {
            access_token: &access,
            token_type: "Bearer",
            expires_in: w.cfg.access_ttl_ms / 1000,
            refresh_token: &refresh,
            scope: scope.to_string(),
        },
    )
    .header("cache-control", "no-store")
}

/// `POST /v1/oauth/token` (spec 4.1, 3.1, 3.2).
pub fn token(w: &mut World, authorization: Option<&str>, form: &Form, now: i64) -> Reply {
    let app = match client(w, authorization, form) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let invalid_grant = |why: &str| Reply::oauth_error(400, "invalid_grant", why);
    let Some(grant) = field(form, "grant_type") else {
        return Reply::oauth_error(400, "invalid_request", "grant_type is required");
    };
    match grant {
        "authorization_code" => {
            let (Some(code), Some(redirect_uri)) =
                (field(form, "code"), field(form, "redirect_uri"))
            else {
                return Reply::oauth_error(
                    400,
                    "invalid_request",
                    "code and redirect_uri are required",
                );
            };
            let Some(c) = w.codes.get(code) else {
                return invalid_grant("unknown code");
            };
            let integration = c.integration;
            if w.integrations[integration].app != app {
                return invalid_grant("code issued to another client");
            }
            if c.used {
                // Theft signal (3.1): everything of that integration is revoked.
                w.revoke_all(integration, now);
                let id = w.integrations[integration].id.clone();
                w.log(format!(
                    "code reused: every token of {id} revoked (theft signal)"
                ));
                return invalid_grant("code already used");
            }
            if now >= c.expires_at {
                return invalid_grant("code expired");
            }
            if c.redirect_uri != redirect_uri {
                return invalid_grant("redirect_uri does not match the consent");
            }
            if w.integrations[integration].consent.is_none() {
                return invalid_grant("consent withdrawn");
            }
            if let Some(c) = w.codes.get_mut(code) {
                c.used = true;
            }
            let id = w.integrations[integration].id.clone();
            w.log(format!("token issued: {id}"));
            issue(w, integration, now)
        }
        "refresh_token" => {
            let Some(rt) = field(form, "refresh_token") else {
                return Reply::oauth_error(400, "invalid_request", "refresh_token is required");
            };
            let Some(r) = w.refresh.get(rt) else {
                return invalid_grant("unknown refresh token");
            };
            let integration = r.integration;
            if w.integrations[integration].app != app {
                return invalid_grant("refresh token of another client");
            }
            if r.revoked_at.is_some()
                || now >= r.expires_at
                || w.integrations[integration].consent.is_none()
            {
                return invalid_grant("refresh token revoked or expired");
            }
            if let Some(r) = w.refresh.get_mut(rt) {
                r.revoked_at = Some(now); // rotation; the old access token lives on
            }
            let id = w.integrations[integration].id.clone();
            w.log(format!("token refreshed: {id}"));
            issue(w, integration, now)
        }
        other => Reply::oauth_error(
            400,
            "unsupported_grant_type",
            &format!("grant_type {other:?} is not supported"),
        ),
    }
}

/// `POST /v1/oauth/revoke` (spec 4.2): 200 with no body for any token.
pub fn revoke(w: &mut World, authorization: Option<&str>, form: &Form, now: i64) -> Reply {
    let app = match client(w, authorization, form) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let Some(token) = field(form, "token") else {
        return Reply::oauth_error(400, "invalid_request", "token is required");
    };
    let owner = |w: &World, integration: usize| w.integrations[integration].app == app;
    if let Some(integration) = w.access.get(token).map(|a| a.integration) {
        if owner(w, integration) {
            if let Some(a) = w.access.get_mut(token) {
                a.revoked_at.get_or_insert(now);
            }
            w.log("access token revoked".to_owned());
        }
    } else if let Some(integration) = w.refresh.get(token).map(|r| r.integration) {
        if owner(w, integration) {
            if let Some(r) = w.refresh.get_mut(token) {
                r.revoked_at.get_or_insert(now);
            }
            for a in w
                .access
                .values_mut()
                .filter(|a| a.integration == integration)
            {
                a.revoked_at.get_or_insert(now);
            }
            w.log("refresh token revoked (and its access tokens)".to_owned());
        }
    }
    Reply::empty(200)
}

/// A bot call's credentials after the Bearer check.
#[derive(Debug, Clone, Copy)]
pub struct Auth {
    /// Integration index.
    pub integration: usize,
    /// Effective permissions: the token's scope within the DJ's current consent.
    pub scope: Scope,
    /// When the access token expires.
    pub expires_at: i64,
}

/// The access token of a `Bearer` authorization header.
pub fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    authorization
        .and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        })
        .map(str::trim)
}

/// The Bearer check of every bot endpoint (spec 5.1).
pub fn bearer(w: &World, authorization: Option<&str>, now: i64) -> Result<Auth, ApiError> {
    let unauthorized = || ApiError::new(401, None, "Invalid or missing access token.");
    let token = bearer_token(authorization).ok_or_else(unauthorized)?;
    let a = w.access.get(token).ok_or_else(unauthorized)?;
    if let Some(at) = a.revoked_at {
        if now - at < 60_000 {
            return Err(ApiError::new(
                401,
                Some("OAPI_MNGR_0203"),
                "The access token was revoked.",
            ));
        }
        return Err(unauthorized());
    }
    if now >= a.expires_at {
        return Err(unauthorized());
    }
    let Some(consent) = w.integrations[a.integration].consent else {
        return Err(unauthorized());
    };
    if w.apps[w.integrations[a.integration].app].suspended {
        return Err(unauthorized());
    }
    Ok(Auth {
        integration: a.integration,
        scope: a.scope.intersect(consent),
        expires_at: a.expires_at,
    })
}

/// The DJ disconnects the integration: every token revoked, consent gone,
/// the bot's streams cut.
pub fn disconnect(w: &mut World, integration: usize, now: i64) {
    w.integrations[integration].consent = None;
    w.revoke_all(integration, now);
    let dj = w.integrations[integration].dj;
    w.drop_streams(dj, |s| s.integration == integration);
    let id = w.integrations[integration].id.clone();
    w.log(format!("integration {id} disconnected by the DJ"));
}
