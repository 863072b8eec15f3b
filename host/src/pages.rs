//! The dashboard's HTML, rendered on the server with maud (every value
//! escaped by construction); a few lines of inline script apply the live
//! updates that `/events` sends (no front-end build step).

use maud::{html, Markup, PreEscaped, DOCTYPE};
use onair::proto::quota::DailyQuota;

use crate::bots::BotView;
use crate::store::LogRow;

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#222;background:#fafafa}
h1{font-size:1.4rem;margin:0 0 .3rem}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{padding:.35rem .5rem;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}
.state{display:inline-block;padding:.05rem .45rem;border-radius:.6rem;font-size:.85em;background:#ddd}
.state-connected{background:#c8ecc9}.state-waiting{background:#e6e9f5}
.state-stopped,.state-needs_consent{background:#f7c9c9}.state-disabled{background:#ccc}
.state-backing_off,.state-refreshing,.state-connecting,.state-starting{background:#f8e7b5}
.onair{color:#c0392b;font-weight:600}.muted{color:#888}
.card{background:#fff;border:1px solid #e4e4e4;padding:.8rem 1rem;margin:.8rem 0}
ul.log{list-style:none;padding:0;margin:0;background:#fff;border:1px solid #e4e4e4}
ul.log li{padding:.25rem .6rem;border-bottom:1px solid #f0f0f0}
.kind{display:inline-block;min-width:5.5rem;color:#555}
form.inline{display:inline}
a.button,button{font:inherit;padding:.2rem .6rem}
"#;

fn page(title: &str, body: Markup, script: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (body)
                script { (PreEscaped(script)) }
            }
        }
    }
}

/// A duration from now, for people: "in 12 s", "3 min ago".
pub fn relative(at_ms: u64, now_ms: u64) -> String {
    let (d, ahead) = if at_ms >= now_ms {
        (at_ms - now_ms, true)
    } else {
        (now_ms - at_ms, false)
    };
    let text = match d / 1000 {
        s if s < 90 => format!("{s} s"),
        s if s < 90 * 60 => format!("{} min", s / 60),
        s if s < 48 * 3600 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    };
    if ahead {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

fn state_word(view: &BotView) -> &'static str {
    match view.state {
        "connected" if view.on_air => "on air",
        "connected" => "connected",
        "connecting" => "connecting",
        "waiting" => "waiting for a broadcast",
        "backing_off" => "backing off",
        "refreshing" => "refreshing its token",
        "needs_consent" => "needs the DJ's consent",
        "stopped" => "stopped",
        "disabled" => "disabled",
        "starting" => "starting",
        "elsewhere" => "on another replica",
        other => other,
    }
}

fn quota_line(quota: &DailyQuota, now_ms: u64) -> Markup {
    html! {
        @match (quota.remaining, quota.reset_ms) {
            (Some(left), Some(reset)) => { (left) " calls left today (resets " (relative(reset, now_ms)) ")" }
            _ => span.muted { "not known yet (no call answered today)" },
        }
        @for block in &quota.blocks {
            @if block.until_ms > now_ms {
                " · blocked: "
                (block.scope.as_ref().map_or("every call", |s| s.as_str()))
                " until " (relative(block.until_ms, now_ms))
            }
        }
    }
}

/// The quota line of the dashboard's header (also sent as a live update).
pub fn index_quota(quota: &DailyQuota, now_ms: u64) -> Markup {
    quota_line(quota, now_ms)
}

/// One row of the bots table (also sent alone as a live update).
pub fn bot_row(view: &BotView) -> Markup {
    let events = view.status.as_ref().map_or(0, |s| {
        let c = &s.counters;
        c.chat + c.presence + c.like + c.donation
    });
    html! {
        tr id={ "bot-" (view.id) } class="bot" data-state=(view.state) data-bot=(view.id) {
            td { (view.id) }
            td.label { a href={ "/bots/" (view.id) } { (view.label) } }
            td { span class={ "state state-" (view.state) } { (state_word(view)) }
                @if let Some((code, _)) = &view.stop { " " span.muted { "(" (code) ")" } }
            }
            td { @if view.on_air { span.onair { "● " (view.live_id.unwrap_or(0)) } } @else { span.muted { "—" } } }
            td { (view.hearts) }
            td { (view.donated) }
            td { (view.joined) }
            td { @if let Some(top) = view.top.first() { (top.name) " (" (top.donated) ")" } @else { span.muted { "—" } } }
            td { (events) }
            td { @if view.reconnect { a href={ "/connect?bot=" (view.id) } { "re-connect" } } }
        }
    }
}

const INDEX_SCRIPT: &str = r#"
(function(){
  var es = new EventSource('/events');
  es.addEventListener('bots', function(e){
    var t = document.createElement('tbody'); t.innerHTML = e.data;
    Array.prototype.slice.call(t.children).forEach(function(row){
      var old = document.getElementById(row.id);
      if (old) { old.replaceWith(row); } else { document.querySelector('#bots tbody').appendChild(row); }
    });
    var n = document.querySelectorAll('#bots tbody tr').length;
    document.getElementById('count').textContent = n;
  });
  es.addEventListener('quota', function(e){ document.getElementById('quota').innerHTML = e.data; });
})();
"#;

/// The dashboard: every bot.
pub fn index(views: &[std::sync::Arc<BotView>], quota: &DailyQuota, now_ms: u64) -> Markup {
    let on_air = views.iter().filter(|v| v.on_air).count();
    page(
        "onair host",
        html! {
            h1 { "onair host" }
            p {
                span id="count" { (views.len()) } " bots, " (on_air) " on air · quota: "
                span id="quota" { (quota_line(quota, now_ms)) }
                " · " a href="/connect" { "Connect a DJ" }
            }
            table id="bots" {
                thead { tr {
                    th { "#" } th { "DJ" } th { "state" } th { "on air" } th { "hearts" }
                    th { "donated" } th { "joined" } th { "top donor" } th { "events" } th {}
                } }
                tbody { @for v in views { (bot_row(v)) } }
            }
        },
        INDEX_SCRIPT,
    )
}

/// The status card of one bot (also sent alone as a live update).
pub fn bot_card(view: &BotView, now_ms: u64) -> Markup {
    html! {
        div id="card" class="card" data-state=(view.state) {
            p { span class={ "state state-" (view.state) } { (state_word(view)) }
                @if let Some(live) = view.live_id { " · broadcast " (live) } }
            @if let Some((code, message)) = &view.stop {
                p { strong { "Stopped (" (code) "): " } (message) }
            }
            @if view.reconnect {
                p { a.button href={ "/connect?bot=" (view.id) } { "Re-connect this bot" }
                    " (the DJ consents again; the bot resumes with its memory)" }
            }
            p { (view.hearts) " hearts · " (view.donated) " donated · " (view.joined) " joined" }
            @if !view.top.is_empty() {
                table { thead { tr { th { "#" } th { "top donor" } th { "donated" } } }
                    tbody { @for (i, d) in view.top.iter().enumerate() {
                        tr { td { (i + 1) } td { (d.name) } td { (d.donated) } }
                    } } }
            }
            @if let Some(s) = &view.status {
                p.muted {
                    "permissions: " (s.scope.join(" "))
                    @if let Some(g) = s.token_generation { " · token pair #" (g) }
                    @if let Some(at) = s.refresh_at_ms { " · refresh " (relative(at, now_ms)) }
                    " · connections " (s.counters.connects)
                    " · chats sent " (s.counters.chats_sent)
                    " · given up " (s.counters.chats_failed)
                }
                @for line in &s.cannot { p.muted { "cannot " (line) } }
                @for block in &s.quota_blocks {
                    p.muted { "daily quota: " (block.scope.as_deref().unwrap_or("every call"))
                        " blocked until " (relative(block.until_ms, now_ms)) }
                }
            }
        }
    }
}

/// One line of the event log.
pub fn log_line(row: &LogRow) -> Markup {
    html! {
        li data-kind=(row.kind) { span.kind { (row.kind) } (row.summary) }
    }
}

const BOT_SCRIPT: &str = r#"
(function(){
  var id = document.body.getAttribute('data-bot') || document.querySelector('[data-bot]').getAttribute('data-bot');
  var es = new EventSource('/events?bot=' + id);
  es.addEventListener('card', function(e){
    var d = document.createElement('div'); d.innerHTML = e.data;
    document.getElementById('card').replaceWith(d.firstElementChild);
  });
  es.addEventListener('log', function(e){
    var u = document.createElement('ul'); u.innerHTML = e.data;
    var log = document.getElementById('log');
    log.insertBefore(u.firstElementChild, log.firstChild);
    while (log.children.length > 100) { log.removeChild(log.lastChild); }
  });
})();
"#;

/// One bot's page.
pub fn bot_page(view: &BotView, log: &[LogRow], now_ms: u64) -> Markup {
    page(
        &format!("{} · onair host", view.label),
        html! {
            p { a href="/" { "← all bots" } }
            h1 data-bot=(view.id) { (view.label) " " span.muted { "#" (view.id) } }
            (bot_card(view, now_ms))
            div.card {
                "Admin: "
                @for action in ["disable", "enable", "revoke"] {
                    form.inline method="post" action={ "/admin/bots/" (view.id) "/" (action) } {
                        button type="submit" { (action) }
                    }
                    " "
                }
                span.muted { "(needs the admin token: " a href="/admin/login" { "log in" } ")" }
            }
            h2 { "Last events" }
            ul id="log" class="log" { @for row in log { (log_line(row)) } }
        },
        BOT_SCRIPT,
    )
}

/// A page that says one thing (an error, a refusal).
pub fn message(title: &str, text: &str, link: Option<(&str, &str)>) -> Markup {
    page(
        title,
        html! {
            h1 { (title) }
            p { (text) }
            @if let Some((href, label)) = link { p { a href=(href) { (label) } } }
            p { a href="/" { "the dashboard" } }
        },
        "",
    )
}

/// The admin login form.
pub fn login(failed: bool) -> Markup {
    page(
        "Admin · onair host",
        html! {
            h1 { "Admin" }
            @if failed { p { strong { "That is not the admin token." } } }
            form method="post" action="/admin/login" {
                label { "Admin token " input type="password" name="token" autocomplete="off"; }
                " " button type="submit" { "Log in" }
            }
        },
        "",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_read_naturally() {
        assert_eq!(relative(10_000, 0), "in 10 s");
        assert_eq!(relative(0, 180_000), "3 min ago");
        assert_eq!(relative(3 * 3_600_000, 0), "in 3 h");
    }

    #[test]
    fn names_from_the_service_are_escaped() {
        let mut view = crate::bots::tests_support::view(3);
        view.label = "<script>alert(1)</script>".into();
        let html = bot_row(&view).into_string();
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
        assert!(html.contains("id=\"bot-3\""));
    }
}
