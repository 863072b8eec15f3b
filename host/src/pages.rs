//! The dashboard's HTML, rendered on the server with maud (every value
//! escaped by construction); the script that applies the live updates
//! `/events` sends and the style are files under `/assets/` ([`crate::assets`]:
//! no inline script or style, as the Content-Security-Policy wants; no
//! front-end build step). Text from the service (nicknames, labels, chat
//! lines, stop messages) is cut to a bound ([`cut`]) and isolated in `<bdi>`
//! so a bidi control in it cannot reorder the rest of its cell or line.

use maud::{html, Markup, DOCTYPE};
use onair::bot::DailyQuota;

use crate::bots::{BotState, BotView};
use crate::store::LogRow;

/// A log line's text is cut to this many characters on a page.
pub const LOG_TEXT_CHARS: usize = 300;
/// A name (a nickname, a bot's label) is cut to this many characters.
pub const NAME_CHARS: usize = 64;
/// A bot's page shows at most this many log lines (the live updates keep
/// the same number).
pub const LOG_LINES: usize = 100;

pub use crate::text::cut;

/// A name from the service: cut, isolated.
fn name(text: &str) -> Markup {
    html! { bdi { (cut(text, NAME_CHARS)) } }
}

/// A page: `script` names its script under `/assets/` (the live updates:
/// `host.js`), or is empty for none.
fn page(title: &str, body: Markup, script: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (cut(title, NAME_CHARS + 20)) }
                link rel="stylesheet" href="/assets/host.css";
                @if !script.is_empty() {
                    script src={ "/assets/" (script) } defer {}
                }
            }
            body {
                (body)
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
        BotState::Connected if view.on_air => "on air",
        BotState::Connected => "connected",
        BotState::Connecting => "connecting",
        BotState::Waiting => "waiting for a broadcast",
        BotState::BackingOff => "backing off",
        BotState::Refreshing => "refreshing its token",
        BotState::NeedsConsent => "needs the DJ's consent",
        BotState::Stopped => "stopped",
        BotState::Disabled => "disabled",
        BotState::Starting => "starting",
        BotState::Elsewhere => "on another replica",
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
            td.label { a href={ "/bots/" (view.id) } { (name(&view.label)) } }
            td { span class={ "state state-" (view.state) } { (state_word(view)) }
                @if let Some(stop) = &view.stop { " " span.muted { "(" bdi { (cut(&stop.code, NAME_CHARS)) } ")" } }
            }
            td { @if view.on_air { span.onair { "● " (view.live_id.unwrap_or(0)) } } @else { span.muted { "—" } } }
            td { (view.hearts) }
            td { (view.donated) }
            td { (view.joined) }
            td { @if let Some(top) = view.top.first() { (name(&top.name)) " (" (top.donated) ")" } @else { span.muted { "—" } } }
            td { (events) }
            td { @if view.reconnect { a href={ "/connect?bot=" (view.id) } { "re-connect" } } }
        }
    }
}

/// The dashboard: the bots the viewer sees (the admin: every bot; a DJ:
/// theirs), with the viewer's `controls` (log out, another device).
pub fn index(
    views: &[std::sync::Arc<BotView>],
    quota: &DailyQuota,
    now_ms: u64,
    controls: Markup,
) -> Markup {
    let on_air = views.iter().filter(|v| v.on_air).count();
    page(
        "onair host",
        html! {
            h1 { "onair host" }
            (controls)
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
        "host.js",
    )
}

/// The status card of one bot (also sent alone as a live update).
pub fn bot_card(view: &BotView, now_ms: u64) -> Markup {
    html! {
        div id="card" class="card" data-state=(view.state) {
            p { span class={ "state state-" (view.state) } { (state_word(view)) }
                @if let Some(live) = view.live_id { " · broadcast " (live) } }
            @if let Some(stop) = &view.stop {
                p { strong { "Stopped (" bdi { (cut(&stop.code, NAME_CHARS)) } "): " } bdi { (cut(&stop.message, LOG_TEXT_CHARS)) } }
            }
            @if let Some(warning) = &view.warning {
                p.warning { (warning) }
            }
            @if view.reconnect {
                p { a.button href={ "/connect?bot=" (view.id) } { "Re-connect this bot" }
                    " (the DJ consents again; the bot resumes with its memory)" }
            }
            p { (view.hearts) " hearts · " (view.donated) " donated · " (view.joined) " joined" }
            @if !view.top.is_empty() {
                table { thead { tr { th { "#" } th { "top donor" } th { "donated" } } }
                    tbody { @for (i, d) in view.top.iter().enumerate() {
                        tr { td { (i + 1) } td { (name(&d.name)) } td { (d.donated) } }
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
                (replies_table(&s.counters.replies))
                @for line in &s.cannot { p.muted { "cannot " (line) } }
                @for block in &s.quota_blocks {
                    p.muted { "daily quota: " (block.scope.as_deref().unwrap_or("every call"))
                        " blocked until " (relative(block.until_ms, now_ms)) }
                }
            }
        }
    }
}

/// The replies the bot's core sent, merged and dropped, by kind.
fn replies_table(replies: &onair::bot::RepliesCounters) -> Markup {
    html! {
        table id="replies" {
            thead { tr {
                th { "replies" } th { "messages" } th { "people" } th { "merged" } th { "dropped" }
            } }
            tbody { @for kind in onair::kit::ReplyKind::ALL {
                @let c = replies.of(kind);
                tr data-kind=(kind.as_str()) {
                    td { (kind.as_str().replace('_', " ")) }
                    td { (c.messages) } td { (c.people) } td { (c.merged) } td { (c.dropped) }
                }
            } }
        }
    }
}

/// One line of the event log.
pub fn log_line(row: &LogRow) -> Markup {
    html! {
        li data-kind=(row.kind) { span.kind { (row.kind) } bdi { (cut(&row.summary, LOG_TEXT_CHARS)) } }
    }
}

/// One bot's page, with the viewer's `controls` ([`bot_controls`]).
pub fn bot_page(view: &BotView, log: &[LogRow], now_ms: u64, controls: Markup) -> Markup {
    page(
        &format!("{} · onair host", view.label),
        html! {
            p { a href="/" { "← all bots" } }
            h1 data-bot=(view.id) { (name(&view.label)) " " span.muted { "#" (view.id) } }
            (bot_card(view, now_ms))
            (controls)
            h2 { "Last events" }
            ul id="log" class="log" data-max=(LOG_LINES) { @for row in log.iter().take(LOG_LINES) { (log_line(row)) } }
        },
        "host.js",
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

/// What a visitor without a session sees: how to connect a bot, nothing
/// about any DJ.
pub fn welcome() -> Markup {
    page(
        "onair host",
        html! {
            h1 { "onair host" }
            p { "A bot for your broadcasts: it greets your listeners, thanks donors and keeps the tally." }
            p { a.button href="/connect" { "Connect your bot" } }
            p.muted { "Already connected on another device? Open the sign-in link made there. "
                a href="/admin/login" { "Admin" } }
        },
        "",
    )
}

/// A hidden form field with the CSRF token.
fn csrf_field(csrf: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(csrf); }
}

/// The dashboard's controls for a DJ (`dj`) and/or the admin (`admin`):
/// log out, sign in on another device, connect another bot.
pub fn controls(csrf: &str, dj: bool, admin: bool) -> Markup {
    html! {
        p.controls {
            @if dj {
                "Your bots · "
                form.inline method="post" action="/signin-link" {
                    (csrf_field(csrf)) button type="submit" { "sign in on another device" }
                }
                " "
                form.inline method="post" action="/logout" {
                    (csrf_field(csrf)) button type="submit" { "log out" }
                }
            }
            @if admin {
                " Admin · "
                form.inline method="post" action="/admin/logout" {
                    (csrf_field(csrf)) button type="submit" { "admin log out" }
                }
            }
        }
    }
}

/// A bot's actions for its viewer: the DJ disables and enables their bot
/// (not one the admin disabled) and revokes it; the admin does all of it
/// and ends the DJ's sessions.
pub fn bot_controls(id: i64, csrf: &str, admin: bool, by_admin: bool) -> Markup {
    let base = if admin { "/admin/bots/" } else { "/bots/" };
    html! {
        div.card {
            (if admin { "Admin: " } else { "Your bot: " })
            @for action in ["disable", "enable", "revoke"] {
                @if admin || action != "enable" || !by_admin {
                    form.inline method="post" action={ (base) (id) "/" (action) } {
                        (csrf_field(csrf)) button type="submit" { (action) }
                    }
                    " "
                }
            }
            @if admin {
                form.inline method="post" action={ "/admin/bots/" (id) "/logout" } {
                    (csrf_field(csrf)) button type="submit" { "end the DJ's sessions" }
                }
            }
            @if by_admin {
                p.muted { "An admin disabled this bot: only the admin enables it again                     (a new consent is stored, the bot stays disabled)." }
            }
        }
    }
}

/// The admin login form (its CSRF token in a hidden field).
pub fn admin_login(failed: bool, csrf: &str) -> Markup {
    page(
        "Admin · onair host",
        html! {
            h1 { "Admin" }
            @if failed { p { strong { "That is not the admin token." } } }
            form method="post" action="/admin/login" {
                (csrf_field(csrf))
                label { "Admin token " input type="password" name="token" autocomplete="off"; }
                " " button type="submit" { "Log in" }
            }
        },
        "",
    )
}

/// The one-time sign-in link for another device.
pub fn signin_link(url: &str, minutes: i64) -> Markup {
    page(
        "Sign in on another device · onair host",
        html! {
            h1 { "Sign in on another device" }
            p { "Open this link on the other device within " (minutes) " minutes. It works once." }
            p { code { (url) } }
            p { a href="/" { "back to your bots" } }
        },
        "",
    )
}

/// The sign-in page a sign-in link opens: one button (the link alone
/// changes nothing).
pub fn signin_confirm(code: &str) -> Markup {
    page(
        "Sign in · onair host",
        html! {
            h1 { "Sign in" }
            form method="post" action="/signin" {
                input type="hidden" name="code" value=(code);
                button type="submit" { "Sign in to your bots" }
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
    fn text_is_cut_at_a_character_boundary() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc…");
        assert_eq!(cut("ééééé", 2), "éé…");
        assert_eq!(cut("🎧🎧🎧", 1), "🎧…");
        assert_eq!(cut("", 0), "");
        let long = "x".repeat(100_000);
        assert_eq!(
            cut(&long, LOG_TEXT_CHARS).chars().count(),
            LOG_TEXT_CHARS + 1
        );
    }

    #[test]
    fn user_text_is_isolated_and_bounded() {
        let mut view = crate::bots::tests_support::view(3);
        view.label = format!("\u{202E}{}", "n".repeat(500));
        let row = bot_row(&view).into_string();
        assert!(row.contains("<bdi>\u{202E}"), "{row}");
        assert!(row.len() < 2_000, "{}", row.len());
        let line = log_line(&LogRow {
            integration_id: 3,
            frame_id: "f".into(),
            kind: "chat".into(),
            live_id: 1,
            seq: 1,
            at_ms: 0,
            summary: format!("\u{2067}Mina: {}", "<".repeat(100_000)),
            detail: "{}".into(),
            lease: 0,
        })
        .into_string();
        assert!(line
            .starts_with("<li data-kind=\"chat\"><span class=\"kind\">chat</span><bdi>\u{2067}"));
        assert!(line.ends_with("…</bdi></li>"), "{line}");
        assert!(line.len() < 300 * 4 + 100, "{}", line.len());
    }

    #[test]
    fn the_replies_table_has_a_row_per_kind() {
        let mut counters = onair::bot::RepliesCounters::default();
        counters.welcome.messages = 1;
        counters.welcome.people = 3;
        counters.welcome.merged = 3;
        counters.thanks.dropped = 7;
        let html = replies_table(&counters).into_string();
        assert!(
            html.contains(
                "<tr data-kind=\"welcome\"><td>welcome</td><td>1</td><td>3</td><td>3</td><td>0</td></tr>"
            ),
            "{html}"
        );
        assert!(html.contains(
            "<tr data-kind=\"thanks\"><td>thanks</td><td>0</td><td>0</td><td>0</td><td>7</td></tr>"
        ));
        assert!(html.contains("<tr data-kind=\"welcome_back\"><td>welcome back</td>"));
        assert_eq!(html.matches("<tr data-kind=").count(), 5);
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
