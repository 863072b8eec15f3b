//! A response before it becomes a hyper response: status, headers, body.

use serde::Serialize;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Response, StatusCode};

use crate::body::EmuBody;
use crate::stream::StreamBody;
use crate::wire;

/// The body of a [`Reply`].
#[derive(Debug)]
pub enum ReplyBody {
    /// No body.
    Empty,
    /// `application/json`.
    Json(String),
    /// Text with its content type.
    Text(String, &'static str),
    /// An open event stream (boxed: it is much larger than the others).
    Stream(Box<StreamBody>),
}

/// One response.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// Body.
    pub body: ReplyBody,
}

impl Reply {
    /// As an HTTP response: its status, content type, headers and body.
    pub fn into_http(self) -> Response<EmuBody> {
        let (content_type, body) = match self.body {
            ReplyBody::Empty => (None, EmuBody::Full(None)),
            ReplyBody::Json(s) => (
                Some("application/json"),
                EmuBody::Full(Some(Bytes::from(s))),
            ),
            ReplyBody::Text(s, ct) => (Some(ct), EmuBody::Full(Some(Bytes::from(s)))),
            ReplyBody::Stream(s) => (Some("text/event-stream"), EmuBody::Stream(s)),
        };
        let mut resp = Response::new(body);
        *resp.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let headers = resp.headers_mut();
        if let Some(ct) = content_type {
            headers.insert(hyper::header::CONTENT_TYPE, HeaderValue::from_static(ct));
        }
        for (name, value) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.append(HeaderName::from_static(name), v);
            }
        }
        resp
    }

    /// A JSON body: `body` written by serde_json.
    pub fn json<T: Serialize + ?Sized>(status: u16, body: &T) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: ReplyBody::Json(wire::to_json(body)),
        }
    }

    /// No body.
    pub fn empty(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: ReplyBody::Empty,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// A bot endpoint error (spec 7.1); a 429 without detailCode is the quota's empty body.
    pub fn problem(
        instance: &str,
        status: u16,
        detail: Option<&str>,
        message: &str,
        now_ms: i64,
    ) -> Self {
        if status == 429 && detail.is_none() {
            return Self::empty(429);
        }
        Self::json(
            status,
            &wire::Problem {
                instance,
                status,
                title: wire::reason_phrase(status),
                detail_code: detail,
                message,
                user_id: None,
                extra: None,
                timestamp: now_ms,
            },
        )
    }

    /// An event stream open failure (spec 7.2).
    pub fn stream_error(status: u16, detail: Option<&str>, message: &str) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: ReplyBody::Text(
                wire::stream_error(status, detail, message),
                "text/event-stream;charset=UTF-8",
            ),
        }
    }

    /// A token endpoint error (spec 7.4); 401s carry the Basic challenge.
    pub fn oauth_error(status: u16, error: &str, description: &str) -> Self {
        let r = Self::json(
            status,
            &wire::OAuthError {
                error,
                error_description: description,
            },
        );
        if status == 401 {
            r.header("www-authenticate", "Basic realm=\"oauth\"")
        } else {
            r
        }
    }

    /// A control API error: `{"error": message}`.
    pub fn control_error(status: u16, message: &str) -> Self {
        Self::json(status, &wire::ControlError { error: message })
    }
}
