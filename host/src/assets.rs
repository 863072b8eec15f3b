//! The pages' script and style, served as files (`/assets/host.js`,
//! `/assets/host.css`) so the Content-Security-Policy allows no inline
//! script or style. Compiled into the binary.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

/// The live updates of the dashboard and of a bot's page.
pub const SCRIPT: &str = include_str!("assets/host.js");
/// The pages' style.
pub const STYLE: &str = include_str!("assets/host.css");

/// `GET /assets/host.js`, `GET /assets/host.css`.
pub fn router() -> Router {
    Router::new()
        .route(
            "/assets/host.js",
            get(|| async {
                (
                    [
                        (CONTENT_TYPE, "text/javascript; charset=utf-8"),
                        (CACHE_CONTROL, "no-cache"),
                    ],
                    SCRIPT,
                )
                    .into_response()
            }),
        )
        .route(
            "/assets/host.css",
            get(|| async {
                (
                    [
                        (CONTENT_TYPE, "text/css; charset=utf-8"),
                        (CACHE_CONTROL, "no-cache"),
                    ],
                    STYLE,
                )
                    .into_response()
            }),
        )
}
