//! What a viewer sees: the dashboard, a bot's page, the live updates, the
//! JSON view and the metrics, each limited to the viewer's bots.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::Stream;
use serde::Deserialize;
use tokio::sync::{broadcast, oneshot, watch};

use super::{html, not_found, unauthorized, Viewer, Web};
use crate::bots::{BotView, Command, Update};
use crate::metrics::StateLabel;
use crate::pages;
use crate::tenants::{self, DisabledBy};

impl Web {
    /// The bots `viewer` sees: `None` for every bot (the admin), else the
    /// DJ's (empty for nobody).
    async fn visible(&self, viewer: &Viewer) -> Option<BTreeSet<i64>> {
        if viewer.admin() {
            return None;
        }
        let mut ids = BTreeSet::new();
        if let Some(dj) = viewer.dj() {
            match tenants::bots_of(&self.hub.store, dj).await {
                Ok(own) => ids.extend(own),
                Err(e) => tracing::error!(error = %e, "a DJ's bots not read"),
            }
        }
        Some(ids)
    }

    fn views_of(&self, visible: Option<&BTreeSet<i64>>) -> Vec<Arc<BotView>> {
        self.hub
            .views()
            .into_iter()
            .filter(|v| visible.is_none_or(|ids| ids.contains(&v.id)))
            .collect()
    }
}

pub(super) fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}

pub(super) async fn index(State(web): State<Web>, headers: HeaderMap) -> Response {
    let viewer = web.viewer(&headers).await;
    if !viewer.admin() && viewer.dj().is_none() {
        return html(StatusCode::OK, pages::welcome());
    }
    let visible = web.visible(&viewer).await;
    let views = web.views_of(visible.as_ref());
    let now = u64::try_from(web.now()).unwrap_or(0);
    let mut controls = pages::controls(&viewer.csrf(), viewer.dj().is_some(), viewer.admin());
    if viewer.admin() {
        controls = maud::html! { (controls) (probe_line(&web)) };
    }
    html(
        StatusCode::OK,
        pages::index(&views, &web.hub.daily_quota(), now, controls),
    )
}

/// The admin's line on off-air probing: the rate spent against this
/// replica's share of the app's budget.
fn probe_line(web: &Web) -> maud::Markup {
    let summary = web.hub.probes.summary();
    let budget = web.hub.config.probe_budget_per_s;
    maud::html! {
        p id="probes" {
            "Finding DJs on air: "
            span id="probes-spent" { (format!("{:.1}", summary.spent_per_s)) }
            " probes/s sent of this replica's "
            span id="probes-share" { (format!("{:.1}", summary.plan.share_per_s)) }
            "/s (the app's budget: " (budget) "/s over all replicas) · "
            (summary.plan.off_air) " bots off air"
        }
    }
}

pub(super) async fn bot_page(
    State(web): State<Web>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> Response {
    let viewer = web.viewer(&headers).await;
    if !web.sees(&viewer, id).await {
        return not_found();
    }
    let Some(view) = web.hub.view(id) else {
        return not_found();
    };
    let log = web
        .hub
        .store
        .events(id, None, None, 100)
        .await
        .unwrap_or_default();
    let by_admin = matches!(
        tenants::disabled_by(&web.hub.store, id).await,
        Ok(Some(DisabledBy::Admin))
    );
    let now = u64::try_from(web.now()).unwrap_or(0);
    let controls = pages::bot_controls(id, &viewer.csrf(), viewer.admin(), by_admin);
    html(StatusCode::OK, pages::bot_page(&view, &log, now, controls))
}

#[derive(Debug, Deserialize)]
pub(super) struct BotQuery {
    pub(super) bot: Option<i64>,
}

/// `GET /events`: the dashboard's live updates, of the bots the viewer
/// sees. Table rows (or one bot's card) are sent at most every 300 ms with
/// what changed; log lines at once.
pub(super) async fn events(
    State(web): State<Web>,
    headers: HeaderMap,
    Query(q): Query<BotQuery>,
) -> Response {
    let viewer = web.viewer(&headers).await;
    if !viewer.admin() && viewer.dj().is_none() {
        return unauthorized(false);
    }
    if let Some(id) = q.bot {
        if !web.sees(&viewer, id).await {
            return not_found();
        }
    }
    // What this stream may show: one bot, the DJ's bots, or every bot.
    let allowed: Option<BTreeSet<i64>> = match q.bot {
        Some(id) => Some(BTreeSet::from([id])),
        None => web.visible(&viewer).await,
    };
    live(web, q.bot, allowed).into_response()
}

fn live(
    web: Web,
    bot: Option<i64>,
    allowed: Option<BTreeSet<i64>>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    struct S {
        web: Web,
        rx: broadcast::Receiver<Update>,
        bot: Option<i64>,
        allowed: Option<BTreeSet<i64>>,
        dirty: BTreeSet<i64>,
        tick: tokio::time::Interval,
        stopping: watch::Receiver<bool>,
        queued: std::collections::VecDeque<SseEvent>,
    }
    impl S {
        fn shows(&self, id: i64) -> bool {
            self.allowed.as_ref().is_none_or(|a| a.contains(&id))
        }

        fn all_dirty(&mut self) {
            let ids: Vec<i64> = self
                .web
                .views_of(self.allowed.as_ref())
                .iter()
                .map(|v| v.id)
                .collect();
            self.dirty.extend(ids);
        }
    }
    let mut state = S {
        rx: web.hub.updates.subscribe(),
        stopping: web.stopping.clone(),
        web,
        bot,
        allowed,
        dirty: BTreeSet::new(),
        tick: tokio::time::interval(Duration::from_millis(300)),
        queued: std::collections::VecDeque::new(),
    };
    state.all_dirty();
    let stream = futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.queued.pop_front() {
                return Some((Ok(event), s));
            }
            if *s.stopping.borrow() {
                return None;
            }
            tokio::select! {
                update = s.rx.recv() => match update {
                    Ok(Update::Bot(id)) => {
                        if s.shows(id) {
                            s.dirty.insert(id);
                        }
                    }
                    Ok(Update::Log(row)) => {
                        if s.bot == Some(row.integration_id) {
                            let line = pages::log_line(&row).into_string();
                            return Some((Ok(SseEvent::default().event("log").data(line)), s));
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => s.all_dirty(),
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = s.tick.tick() => {
                    if s.dirty.is_empty() {
                        continue;
                    }
                    let now = u64::try_from(s.web.now()).unwrap_or(0);
                    let ids = std::mem::take(&mut s.dirty);
                    match s.bot {
                        Some(id) => {
                            if let Some(view) = s.web.hub.view(id) {
                                let card = pages::bot_card(&view, now).into_string();
                                s.queued.push_back(SseEvent::default().event("card").data(card));
                            }
                        }
                        None => {
                            let rows: String = ids
                                .iter()
                                .filter_map(|id| s.web.hub.view(*id))
                                .map(|v| pages::bot_row(&v).into_string())
                                .collect();
                            if !rows.is_empty() {
                                s.queued.push_back(SseEvent::default().event("bots").data(rows));
                            }
                            let quota = s.web.hub.daily_quota();
                            if quota.reset_ms.is_some() || !quota.blocks.is_empty() {
                                let line = pages::index_quota(&quota, now).into_string();
                                s.queued.push_back(SseEvent::default().event("quota").data(line));
                            }
                        }
                    }
                }
                _ = s.stopping.changed() => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

pub(super) async fn api_bots(State(web): State<Web>, headers: HeaderMap) -> Response {
    let viewer = web.viewer(&headers).await;
    if !viewer.admin() && viewer.dj().is_none() {
        return unauthorized(true);
    }
    let visible = web.visible(&viewer).await;
    Json(serde_json::json!({
        "bots": web.views_of(visible.as_ref()),
        "dailyQuota": web.hub.daily_quota(),
    }))
    .into_response()
}

#[derive(Debug, Deserialize)]
pub(super) struct BotApiQuery {
    events: Option<i64>,
    kind: Option<String>,
}

pub(super) async fn api_bot(
    State(web): State<Web>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Query(q): Query<BotApiQuery>,
) -> Response {
    let viewer = web.viewer(&headers).await;
    if !viewer.admin() && viewer.dj().is_none() {
        return unauthorized(true);
    }
    let seen = if web.sees(&viewer, id).await {
        web.hub.view(id)
    } else {
        None
    };
    let Some(view) = seen else {
        return (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"error": "no such bot"})),
        )
            .into_response();
    };
    let store = &web.hub.store;
    let mut broadcasts = Vec::new();
    for b in store.broadcasts(id).await.unwrap_or_default() {
        let tally: serde_json::Value = serde_json::from_str(&b.tally).unwrap_or_default();
        broadcasts.push(serde_json::json!({
            "liveId": (b.live_id != 0).then_some(b.live_id),
            "endedAtMs": b.ended_at_ms,
            "ended": true,
            "tally": tally,
        }));
    }
    let (reply, answer) = oneshot::channel();
    let current = if web.hub.command(id, Command::Tally(reply)).await {
        tokio::time::timeout(Duration::from_secs(5), answer)
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
    } else {
        None
    };
    let current = current.map(|(live_id, tally)| {
        serde_json::json!({
            "liveId": live_id,
            "ended": false,
            "tally": serde_json::from_str::<serde_json::Value>(&tally).unwrap_or_default(),
        })
    });
    let limit = q.events.unwrap_or(100).clamp(0, 1_000_000);
    let events: Vec<serde_json::Value> = store
        .events(id, None, q.kind.as_deref(), limit)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            serde_json::json!({
                "frameId": r.frame_id, "kind": r.kind, "liveId": r.live_id, "seq": r.seq,
                "atMs": r.at_ms, "summary": r.summary,
                "detail": serde_json::from_str::<serde_json::Value>(&r.detail).unwrap_or_default(),
            })
        })
        .collect();
    Json(serde_json::json!({
        "bot": view,
        "broadcasts": broadcasts,
        "current": current,
        "events": events,
    }))
    .into_response()
}

/// `GET /metrics`: the admin's (the bearer token, for scrapers).
pub(super) async fn metrics(State(web): State<Web>, headers: HeaderMap) -> Response {
    let viewer = web.viewer(&headers).await;
    if !viewer.admin() {
        return unauthorized(wants_json(&headers));
    }
    let m = &web.hub.metrics;
    m.bots.clear();
    for view in web.hub.views() {
        m.bots
            .get_or_create(&StateLabel {
                state: view.state.as_str().to_owned(),
            })
            .inc();
    }
    (
        [(
            CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        m.encode(),
    )
        .into_response()
}
