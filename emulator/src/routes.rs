//! The route table: every path the emulator answers, written once here, and
//! the [`axum::Router`] that maps a request to its handler.
//!
//! - the service's endpoints ([`Endpoint`]: `/v1/oauth/…`, `/v1/live…`), one
//!   handler each, routed by method; a wrong method (HEAD on a GET endpoint
//!   included) goes to [`api`] all the same, which answers an injected fault
//!   first and then 405 `OAPI_MNGR_0103` with `Allow`, as the service does;
//! - the consent page ([`AUTHORIZE`]), every method (it answers 405 itself);
//! - the control API under [`CONTROL`], one handler per call of
//!   [`control::CALLS`]; a wrong method is a control 405 with `Allow`, an
//!   unknown call a control 404, both with `cache-control: no-store`;
//! - anything else: the service's 404 problem body (`No such endpoint.`),
//!   recorded in the request log.
//!
//! Paths are matched as they arrive (no percent-decoding, no trailing-slash
//! folding): `/v1/live/` and `/v1/%6Cive` are unknown paths, as before.
//!
//! ```
//! use onair_emulator::paths::Endpoint;
//! assert_eq!(Endpoint::of_path("/v1/live/chat"), Some(Endpoint::Chat));
//! assert_eq!(Endpoint::Chat.method(), "POST");
//! assert_eq!(Endpoint::of_path("/v1/live/"), None);
//! ```

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, MethodFilter, MethodRouter};
use axum::Router;
use bytes::Bytes;

use crate::api;
use crate::consent;
use crate::control;
use crate::paths::{is_control, Endpoint, AUTHORIZE, CONTROL};
use crate::reply::Reply;
use crate::requests::Arrived;
use crate::requests::{redact_query, RequestFacts, RequestRecord};
use crate::shared::Shared;

fn arrived(shared: &Shared, req: &Request) -> Arrived {
    req.extensions()
        .get::<Arrived>()
        .cloned()
        .unwrap_or_else(|| Arrived {
            body: Bytes::new(),
            now: shared.clock.now_ms(),
            kill: None,
        })
}

fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        self.into_http().map(Body::new)
    }
}

type Sh = State<Arc<Shared>>;

/// The router of one emulator.
pub fn router(shared: Arc<Shared>) -> Router {
    let mut router: Router<Arc<Shared>> = Router::new();
    for e in Endpoint::ALL {
        let call = move |State(s): Sh, req: Request| async move { bot(&s, Some(e), &req) };
        router = router.route(e.path(), only(e.method(), call));
    }
    router = router.route(AUTHORIZE, any(authorize));
    let mut paths: Vec<&str> = Vec::new();
    for c in control::CALLS {
        if !paths.contains(&c.path) {
            paths.push(c.path);
        }
    }
    for path in paths {
        let mut methods: MethodRouter<Arc<Shared>> = MethodRouter::new();
        for c in control::CALLS.iter().filter(|c| c.path == path) {
            let f = c.run;
            let call = move |State(s): Sh, req: Request| async move {
                let a = arrived(&s, &req);
                no_store(control::answer(&s, f, req.uri().query(), &a.body))
            };
            methods = add(methods, c.method, call);
        }
        router = router.route(&format!("{CONTROL}{path}"), methods);
    }
    router
        .method_not_allowed_fallback(wrong_method)
        .fallback(not_found)
        .with_state(shared)
}

/// A method router answering `method` with `h` (HEAD, which axum would send
/// to a GET handler, goes to [`wrong_method`] as any other method does).
fn only<H, T>(method: &str, h: H) -> MethodRouter<Arc<Shared>>
where
    H: axum::handler::Handler<T, Arc<Shared>>,
    T: 'static,
{
    add(MethodRouter::new(), method, h)
}

fn add<H, T>(m: MethodRouter<Arc<Shared>>, method: &str, h: H) -> MethodRouter<Arc<Shared>>
where
    H: axum::handler::Handler<T, Arc<Shared>>,
    T: 'static,
{
    if method == "GET" {
        m.on(MethodFilter::GET, h)
            .on(MethodFilter::HEAD, wrong_method)
    } else {
        m.on(MethodFilter::POST, h)
    }
}

fn no_store(reply: Reply) -> Reply {
    reply.header("cache-control", "no-store")
}

/// One request to a bot or token endpoint (or an unknown path: `None`):
/// answered by [`api::handle`], logged and recorded in the request log.
fn bot(shared: &Shared, endpoint: Option<Endpoint>, req: &Request) -> Reply {
    let a = arrived(shared, req);
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let query = req.uri().query();
    let r = api::Request {
        endpoint,
        method: &method,
        path: &path,
        query,
        authorization: header(req, "authorization"),
        content_type: header(req, "content-type"),
        accept: header(req, "accept"),
        body: &a.body,
        kill: a.kill.clone(),
    };
    let mut facts = RequestFacts::default();
    let reply = {
        let mut w = shared.world();
        api::handle(&mut w, &r, a.now, &mut facts)
    };
    let mut w = shared.world();
    w.log(format!("{method} {path} → {}", reply.status));
    w.record_request(RequestRecord {
        at_ms: a.now,
        method,
        path,
        query: query.map(redact_query),
        status: reply.status,
        seq: 0,
        facts,
    });
    reply
}

/// `/oauth/authorize`, any method.
async fn authorize(State(shared): Sh, req: Request) -> Reply {
    let a = arrived(&shared, &req);
    let method = req.method().as_str();
    let mut w = shared.world();
    let reply = consent::authorize(
        &mut w,
        method,
        req.uri().query(),
        header(&req, "accept"),
        a.now,
    );
    w.log(format!("{method} {AUTHORIZE} → {}", reply.status));
    reply
}

/// A known path with another method.
async fn wrong_method(State(shared): Sh, req: Request) -> Reply {
    let path = req.uri().path();
    if is_control(path) {
        let rest = &path[CONTROL.len()..];
        no_store(control::not_allowed(rest))
    } else {
        bot(&shared, Endpoint::of_path(path), &req)
    }
}

/// No route.
async fn not_found(State(shared): Sh, req: Request) -> Reply {
    if is_control(req.uri().path()) {
        no_store(control::no_such_call())
    } else {
        bot(&shared, None, &req)
    }
}
