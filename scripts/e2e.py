#!/usr/bin/env python3
"""The end-to-end check every language's bot goes through (scripts/e2e <lang>).
The bot's side of it is scripts/e2e.d/README.md.

1. Start `onair serve --json --scenario faulty --speed S` on an ephemeral
   127.0.0.1 port and read where it is from its first stdout line.
2. Get a consent code from the control API; start the bot with ONAIR_* set.
3. In the middle of a broadcast, while frames flow to the bot, restart it
   once without holding emulator time: take a mark in the ledger's write
   sequence (POST /_emulator/mark), 50 ms later SIGINT it (--signal TERM:
   SIGTERM; it writes its tally and arrivals to ONAIR_TALLY_OUT and exits
   0), then start the same command without ONAIR_CODE (it resumes from its
   token and state files).
4. When the scenario is done, wait until the bot has read the last
   broadcast's end (its ONAIR_ENDS_OUT line), take a mark, SIGTERM it.
5. Merge both runs (by liveId, the later run's tally of a broadcast wins)
   and judge it against the frames the emulator wrote to this bot
   (GET /_emulator/frames, each numbered in the write sequence): every
   frame a run's connection was written before that run's mark must be in
   the tally (person by person, field by field: tally >= the sum of those
   frames, and <= the ledger's totals); frames written after the mark on
   the stopped run's connection may be missing, and how many were (by kind,
   and who) is printed, never failed. Check that nobody was greeted twice in one broadcast, that
   every reply of the reference kit the bot posted (GET /_emulator/chat)
   names only people who did that thing in that broadcast before it
   (arrived, donated, chatted) and went out within its kind's freshness
   (real time: emulator time over the speed, clock jumps left out), that
   the frozen connection was replaced within the watchdog plus a few
   seconds, and the bot's requests in the emulator's log:
   - one code exchange (a code exchanged twice revokes everything);
   - one refresh per expiry (per TOKEN_EXPIRED end the bot was sent);
   - no call retried after a 401 more than once, nor without a refresh;
   - no GET /v1/live polling (at most three per stream connection);
   - stream reconnects within the spec's bounds: never more than 30 s of
     backoff (plus slack), a few seconds after a 404.
Exit 0 only when all of it holds. Standard library only.
"""

import argparse
import collections
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def stop_all(bot, serve):
    """Ends a run: the bot's process group killed if it still runs, the
    emulator asked to stop (killed after 10 s)."""
    if bot is not None and bot.poll() is None:
        try:
            os.killpg(bot.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    serve.send_signal(signal.SIGTERM)
    try:
        serve.wait(timeout=10)
    except subprocess.TimeoutExpired:
        serve.kill()


def http_json(url, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"null")


def empty(totals):
    return (
        not totals.get("people")
        and totals.get("hearts", 0) == 0
        and totals.get("donated", 0) == 0
        and totals.get("attendance", 0) == 0
    )


FIELDS = ("hearts", "paidHearts", "donated", "donations", "joins", "chats")


def contributions(frame):
    """(field, amount) pairs a frame adds to its person's totals (spec 6)."""
    event = frame.get("event")
    if event == "chat":
        return [("chats", 1)]
    if event == "presence":
        return [("joins", 1)]
    if event == "like":
        hearts = frame.get("hearts", 0)
        return [("hearts", hearts)] + ([("paidHearts", hearts)] if frame.get("paid") else [])
    if event == "donation":
        return [("donations", 1), ("donated", frame.get("donated", 0))]
    return []


def classify_frames(frames, truth, runs):
    """Splits this bot's event frames, broadcast by broadcast, into those the
    tally must hold and those it may miss.

    `runs`: (start, stop) write-sequence marks of each run of the bot: a
    connection opened in (start, stop] is that run's, and its frames written
    up to `stop` (the mark taken right before the run was signalled) are
    required. Frames written after `stop`, and frames of a connection opened
    between a run's stop and the next run's start (the stopped process's),
    are optional. An event sent on two connections (same id) is required
    when either copy is. Returns {liveId: (required, optional)}, each a list
    of frames in write order (the DJ's frames left out, as the ledger does)."""
    opened = {}
    for live, bot in truth:
        for index, conn in enumerate(bot.get("connections", [])):
            opened[(live, index)] = conn.get("openedSeq", 0)
    out = {}
    for live, _ in truth:
        out[live] = ([], [])
    for frame in frames:
        live = frame.get("liveId")
        if live not in out or frame.get("isDj") or not contributions(frame):
            continue
        seq = opened.get((live, frame.get("connection")), 0)
        run = next((k for k, (a, b) in enumerate(runs) if a < seq <= b), None)
        phase = "required" if run is not None and frame["writeSeq"] <= runs[run][1] else "optional"
        frame = dict(frame, phase=phase, run=None if run is None else run + 1)
        out[live][0 if phase == "required" else 1].append(frame)
    for live, (required, optional) in out.items():
        ids = {f.get("id") for f in required}
        seen = set()
        unique = []
        for f in required:
            if f.get("id") not in seen:
                seen.add(f.get("id"))
                unique.append(f)
        optional = [f for f in optional if f.get("id") not in ids]
        seen = set()
        kept = []
        for f in optional:
            if f.get("id") not in seen:
                seen.add(f.get("id"))
                kept.append(f)
        out[live] = (unique, kept)
    return out


def sums(frames):
    """Person -> field -> sum over `frames`."""
    people = collections.defaultdict(lambda: collections.Counter())
    for f in frames:
        for field, amount in contributions(f):
            people[f["userId"]][field] += amount
    return people


def read_prefix(lower, got_people, optional):
    """How many of the optional frames (in write order) the tally holds, when
    it holds exactly a first part of them (a bot reads its stream in order):
    (n, True); (None, False) when no first part matches."""
    remaining = collections.Counter()
    for pid, person in got_people.items():
        for field in FIELDS:
            left = (person.get(field) or 0) - lower.get(pid, {}).get(field, 0)
            if left:
                remaining[(pid, field)] = left
    if not remaining:
        return 0, True
    for n, f in enumerate(optional, 1):
        for field, amount in contributions(f):
            key = (f["userId"], field)
            remaining[key] -= amount
            if remaining[key] == 0:
                del remaining[key]
            elif remaining[key] < 0:
                return None, False
        if not remaining:
            return n, True
    return None, False


def describe(frames):
    """'3 chat, 2 like (140 hearts), 1 donation (500)' for a list of frames."""
    kinds = collections.Counter(f.get("event") for f in frames)
    parts = []
    for kind in ("chat", "presence", "like", "donation"):
        if not kinds[kind]:
            continue
        part = f"{kinds[kind]} {kind}"
        if kind == "like":
            part += f" ({sum(f.get('hearts', 0) for f in frames if f.get('event') == 'like')} hearts)"
        if kind == "donation":
            part += f" ({sum(f.get('donated', 0) for f in frames if f.get('event') == 'donation')} donated)"
        parts.append(part)
    return ", ".join(parts) or "none"


def closed_after(truth, live, missed):
    """'; its connection closed at #N' for the connection of the last missed
    frame (empty when unknown)."""
    for entry_live, bot in truth:
        if entry_live != live:
            continue
        conns = bot.get("connections", [])
        index = missed[-1].get("connection")
        if isinstance(index, int) and index < len(conns):
            conn = conns[index]
            closed = conn.get("closedSeq")
            how = f", {conn.get('end')}" if conn.get("end") else (" (dropped)" if conn.get("dropped") else "")
            return f"; its connection closed at #{closed}{how}" if closed is not None else ""
    return ""


def compare_tally(ledger, client_id, tally):
    """Problems found comparing the bot's broadcasts with the ledger's, exactly
    (every frame delivered must be in the tally: the host's judges, which hold
    the clock while they stop a host), and the truth (liveId, ledger entry)."""
    truth = []
    for broadcast in ledger.get("broadcasts", []):
        for bot in broadcast.get("bots", []):
            if bot.get("clientId") == client_id:
                truth.append((broadcast.get("liveId"), bot))
    truth_totals = [(live, bot["totals"]) for live, bot in truth if not empty(bot["totals"])]
    mine = [t for t in tally.get("broadcasts", []) if not empty(t)]
    problems = []
    if len(mine) != len(truth_totals):
        problems.append(
            f"the bot tallied {len(mine)} broadcast(s) with events, the ledger has "
            f"{len(truth_totals)}"
        )
    for index, ((live, want), got) in enumerate(zip(truth_totals, mine)):
        for key in ("hearts", "donated", "attendance"):
            if want.get(key) != got.get(key):
                problems.append(f"broadcast {live}: {key} {got.get(key)} != ledger {want.get(key)}")
        want_people, got_people = want.get("people", {}), got.get("people", {})
        for pid in sorted(set(want_people) | set(got_people))[:2000]:
            if want_people.get(pid) != got_people.get(pid):
                problems.append(
                    f"broadcast {live} ({index + 1}), person {pid}: bot {got_people.get(pid)} "
                    f"!= ledger {want_people.get(pid)}"
                )
                if len(problems) > 12:
                    return problems, truth
    return problems, truth


def judge_tally(ledger, client_id, tally, frames, runs):
    """Problems found judging the bot's broadcasts, the truth (liveId, ledger
    entry) pairs, and notes on what was missed after a signal (allowed)."""
    truth = []
    for broadcast in ledger.get("broadcasts", []):
        for bot in broadcast.get("bots", []):
            if bot.get("clientId") == client_id:
                truth.append((broadcast.get("liveId"), bot))
    truth_totals = [(live, bot["totals"]) for live, bot in truth if not empty(bot["totals"])]
    mine = [t for t in tally.get("broadcasts", []) if not empty(t)]
    problems, notes = [], []
    if len(mine) != len(truth_totals):
        problems.append(
            f"the bot tallied {len(mine)} broadcast(s) with events, the ledger has "
            f"{len(truth_totals)}"
        )
    split = classify_frames(frames, truth, runs)
    by_live = {t.get("liveId"): t for t in mine if t.get("liveId") is not None}
    for index, (live, want) in enumerate(truth_totals):
        got = by_live.get(live) or (mine[index] if index < len(mine) else {})
        required, optional = split.get(live, ([], []))
        lower = sums(required)
        want_people, got_people = want.get("people", {}), got.get("people", {}) or {}
        short = []
        for pid in sorted(set(want_people) | set(got_people) | set(lower)):
            w, g = want_people.get(pid) or {}, got_people.get(pid)
            if g is None:
                if lower.get(pid):
                    short.append(pid)
                    problems.append(
                        f"broadcast {live} ({index + 1}), person {pid}: missing from the tally; "
                        f"frames it must hold: {describe([f for f in required if f['userId'] == pid])}"
                    )
                continue
            if pid not in want_people:
                problems.append(f"broadcast {live}, person {pid}: in the tally, never delivered: {g}")
                continue
            for field in FIELDS:
                low, high, have = lower.get(pid, {}).get(field, 0), w.get(field, 0), g.get(field) or 0
                if have < low:
                    short.append(pid)
                    mine_frames = [f for f in required if f["userId"] == pid]
                    written = "; ".join(
                        f"#{f['writeSeq']} {f['event']} (run {f['run']}'s connection {f['connection']})"
                        for f in mine_frames[-6:]
                    )
                    problems.append(
                        f"broadcast {live}, person {pid}: {field} {have} < {low} written before "
                        f"the bot was stopped (ledger {high}); its last required frames: {written}"
                    )
                elif have > high:
                    problems.append(
                        f"broadcast {live}, person {pid}: {field} {have} > ledger {high} (never delivered)"
                    )
            complete = all((g.get(field) or 0) == w.get(field, 0) for field in FIELDS)
            if complete and g.get("nickname") != w.get("nickname"):
                problems.append(
                    f"broadcast {live}, person {pid}: nickname {g.get('nickname')!r} "
                    f"!= ledger {w.get('nickname')!r}"
                )
            if len(problems) > 12:
                return problems, truth, notes
        low_attendance = len({f["userId"] for f in required if f.get("event") == "presence"})
        for key, low in (
            ("hearts", sum(p.get("hearts", 0) for p in lower.values())),
            ("donated", sum(p.get("donated", 0) for p in lower.values())),
            ("attendance", low_attendance),
        ):
            have, high = got.get(key) or 0, want.get(key, 0)
            if not low <= have <= high:
                problems.append(
                    f"broadcast {live}: {key} {have} outside [{low} required, {high} ledger]"
                )
        if optional:
            n, prefix = read_prefix(lower, got_people, optional)
            if prefix:
                missed = optional[n:]
                who = sorted({f["userId"] for f in missed})
                numbers = ", ".join(f"#{f['writeSeq']}" for f in missed[:8])
                notes.append(
                    f"broadcast {live}: {len(optional)} frame(s) written to the stopped bot after "
                    f"its mark (50 ms before the signal): {n} read, {len(missed)} missed"
                    + (f" ({describe(missed)}; {len(who)} people: {', '.join(who[:12])}"
                       f"{', …' if len(who) > 12 else ''}; written as {numbers}"
                       f"{', …' if len(missed) > 8 else ''}{closed_after(truth, live, missed)})"
                       if missed else "")
                )
            else:
                lost = []
                for pid in sorted(want_people):
                    g = got_people.get(pid) or {}
                    diff = [
                        f"{field} -{want_people[pid].get(field, 0) - (g.get(field) or 0)}"
                        for field in FIELDS
                        if (g.get(field) or 0) < want_people[pid].get(field, 0)
                    ]
                    if diff:
                        lost.append(f"{pid} ({', '.join(diff)})")
                notes.append(
                    f"broadcast {live}: {len(optional)} frame(s) written to the stopped bot after its "
                    f"mark ({describe(optional)}); the tally holds no first part of them: short of the "
                    f"ledger by {'; '.join(lost[:12]) or 'nothing'}"
                )
    return problems, truth, notes


def merge_runs(runs):
    """Both runs' outputs as one: broadcasts by liveId in the order first
    seen, the later run's tally of a broadcast winning (it resumed from the
    earlier one's state); arrivals of both."""
    order, by_live, arrivals = [], {}, []
    for run in runs:
        for b in run.get("broadcasts", []):
            live = b.get("liveId")
            if live is None:
                order.append(("anon", len(order)))
                by_live[("anon", len(order) - 1)] = b
                continue
            if ("live", live) not in by_live:
                order.append(("live", live))
            by_live[("live", live)] = b
        arrivals += run.get("arrivals", [])
    return {"broadcasts": [by_live[k] for k in order], "arrivals": arrivals}


def greeted_twice(arrivals):
    """(liveId, id) greeted as a first arrival more than once."""
    firsts = collections.Counter(
        (a.get("liveId"), a.get("id"))
        for a in arrivals
        if a.get("kind") == "first" and a.get("liveId") is not None
    )
    return [key for key, n in firsts.items() if n > 1]


def check_frozen(truth, speed, watchdog_ms):
    """The frozen connection was replaced within the watchdog plus a few
    seconds (emulator time is `speed` times real time)."""
    problems = []
    bound = (watchdog_ms + 5_000) * speed
    for live, bot in truth:
        conns = bot.get("connections", [])
        for i, conn in enumerate(conns):
            if not conn.get("stalled"):
                continue
            at = conn.get("stalledAtMs")
            later = [c for c in conns[i + 1:] if c.get("openedAtMs", 0) >= (at or 0)]
            if at is None or not later:
                problems.append(f"broadcast {live}: the frozen connection was never replaced")
                continue
            waited = later[0]["openedAtMs"] - at
            if waited > bound:
                problems.append(
                    f"broadcast {live}: the frozen connection was replaced after "
                    f"{waited / speed / 1000:.1f} s, over the watchdog ({watchdog_ms / 1000:.0f} s) + 5 s"
                )
    return problems


def check_refreshes(requests, truth):
    """One refresh per reason: a TOKEN_EXPIRED end, or a 401 (a bot that
    was not connected when its access token expired, because the clock
    jumped or a slow bot was reconnecting just then, learns of the expiry
    from a 401 on its next call or connect, and refreshes once then)."""
    refreshes = sum(1 for r in requests if r.get("grant") == "refresh_token")
    expiries = sum(1 for _, bot in truth for c in bot.get("connections", [])
                   if c.get("end") == "TOKEN_EXPIRED")
    episodes, open_401 = 0, False
    for r in requests:
        if r["path"] == "/v1/oauth/token":
            open_401 = False
        elif r["status"] == 401 and not open_401:
            episodes, open_401 = episodes + 1, True
    if refreshes < expiries or refreshes > expiries + episodes:
        return [f"{refreshes} refresh(es) for {expiries} token expiry(ies) and {episodes} 401(s)"]
    return []


def check_requests(requests, truth, speed):
    """Problems found in the bot's requests (the emulator's log)."""
    problems = []
    token_posts = [r for r in requests if r["path"] == "/v1/oauth/token"]
    exchanges = [r for r in token_posts if r.get("grant") == "authorization_code"]
    if len(exchanges) != 1:
        problems.append(f"{len(exchanges)} code exchanges (one consent, one exchange)")
    problems += check_refreshes(requests, truth)

    # The 401 rule: after a 401, a refresh, then that call once more; a second
    # 401 for it after the refresh means stop (no third try).
    state = {}  # path -> "ok" | "401" | "401-refreshed" | "401-twice"
    for r in requests:
        path, status = r["path"], r["status"]
        if path == "/v1/oauth/token":
            for p, s in state.items():
                if s == "401":
                    state[p] = "401-refreshed"
            continue
        if not path.startswith("/v1/live"):
            continue
        before = state.get(path, "ok")
        if before == "401":
            problems.append(f"{r['method']} {path} retried after a 401 without a refresh")
        if before == "401-twice":
            problems.append(f"{r['method']} {path} tried again after two 401s")
        if status == 401:
            state[path] = "401-twice" if before == "401-refreshed" else "401"
        else:
            state[path] = "ok"

    live_gets = sum(1 for r in requests if r["method"] == "GET" and r["path"] == "/v1/live")
    opens = sum(1 for r in requests if r["path"] == "/v1/live/events" and r["status"] == 200)
    if live_gets > 3 * max(opens, 1):
        problems.append(f"GET /v1/live polled: {live_gets} calls for {opens} stream connection(s)")

    attempts = [r for r in requests if r["path"] == "/v1/live/events"]
    slack_ms = 2_000
    for before, after in zip(attempts, attempts[1:]):
        gap = after["atMs"] - before["atMs"]
        if gap >= 3_000_000:
            continue  # a clock jump of the scenario, not a wait of the bot
        if gap > (30_000 + slack_ms) * speed:
            problems.append(f"{gap / speed / 1000:.1f} s between stream attempts (backoff caps at 30 s)")
        if before["status"] == 404 and gap < 2_500 * speed:
            problems.append(f"{gap / speed / 1000:.2f} s after a 404: not on air wants a few seconds")
    return problems


# --- Replies: what the bot said, against what people did -------------------

# The reference bots' kit (scripts/e2e.d/README.md): its replies are the
# core's defaults but for the two commands' answers.
REFERENCE_KIT = {
    "commands": [{"name": "hello"}, {"name": "top"}],
    "greetings": {"welcome_back_after_ms": 600000},
    "milestones": {"hearts_every": 100, "donations_every": 1000},
    "tally": True,
    "replies": {"commands": {"hello": "Hello, {nickname}!", "top": "Top donors: {top}"}},
}

# Each kind's freshness (the core's defaults), real milliseconds.
FRESH_MS = {"welcome": 60_000, "welcome_back": 60_000, "thanks": 180_000,
            "milestone": 120_000, "command": 30_000}

# The texts of the reference kit (the core's defaults, the kit's commands):
# (what, kind, template). A merged reply fills the same text with the
# names joined: "Ana, 민지 and Jörg".
REPLY_TEXTS = (
    ("welcome", "welcome", "Welcome, {nicknames}! 🎧"),
    ("welcome_back", "welcome_back", "Welcome back, {nicknames}!"),
    ("thanks", "thanks", "Thank you, {nicknames}!"),
    ("hearts", "milestone", "{reached} hearts tonight! 💜"),
    ("donated", "milestone", "{nickname} has given {reached} tonight!"),
    ("hello", "command", "Hello, {nickname}!"),
    ("top", "command", "Top donors: {top}"),
)
NO_DONORS = "No donations yet tonight."
NOBODY = "friend"  # a missing nickname
AND = " and "
MERGED_NAME_MAX = 40  # UTF-16 units of one name in a merged reply
CHAT_MAX = 200


def utf16_len(text):
    return len(text.encode("utf-16-le")) // 2


def _pattern(template):
    import re
    out, rest = "^", template
    while "{" in rest:
        before, _, after = rest.partition("{")
        name, _, rest = after.partition("}")
        out += re.escape(before) + (r"(?P<reached>\d+)" if name == "reached" else f"(?P<{name}>.+)")
    return re.compile(out + re.escape(rest) + "$", re.S)


REPLY_PATTERNS = tuple((what, kind, _pattern(t)) for what, kind, t in REPLY_TEXTS)


def classify_reply(message):
    """(what, kind, fields) of a message of the reference kit's texts, or
    None (the reminder, anything else)."""
    for what, kind, pattern in REPLY_PATTERNS:
        m = pattern.match(message)
        if m:
            return what, kind, m.groupdict()
    return None


def frame_ms(frame):
    """The emulator time of a frame's event: its id is `<ms>-<n>`."""
    try:
        return int(str(frame.get("id")).split("-")[0])
    except ValueError:
        return None


def real_ms(t0, t1, speed, jumps=()):
    """Real milliseconds between two emulator times: emulator time runs at
    `speed`, and each clock jump (start, size) crossed is left out."""
    gap = t1 - t0
    for start, size in jumps:
        if t0 < start + size <= t1:
            gap -= size
    return gap / max(speed, 1e-9)


class Broadcast:
    """What people did in one broadcast, from the frames written to one bot
    (the DJ's left out, an event sent twice counted once) and the ledger's
    nicknames: per person their signs of arrival (joins, chats), donations
    and chats with times, the hearts' running total, each person's."""

    def __init__(self, live, people, frames, optional_ids=frozenset()):
        self.live = live
        self.nickname = {pid: (p or {}).get("nickname") for pid, p in people.items()}
        self.signs = collections.defaultdict(list)
        self.donations = collections.defaultdict(list)  # pid -> [(ms, amount, optional)]
        self.chats = collections.defaultdict(list)
        self.all_chats = []
        self.likes = []  # (ms, hearts, optional)
        seen = set()
        for f in sorted(frames, key=lambda f: f.get("writeSeq", 0)):
            if f.get("liveId") != live or f.get("isDj") or not f.get("userId"):
                continue
            if f.get("id") in seen or f.get("event") not in ("presence", "chat", "like", "donation"):
                continue
            seen.add(f.get("id"))
            ms, pid, optional = frame_ms(f), f["userId"], f.get("id") in optional_ids
            if ms is None:
                continue
            self.nickname.setdefault(pid, None)
            if f["event"] in ("presence", "chat"):
                self.signs[pid].append((ms, optional))
            if f["event"] == "chat":
                self.chats[pid].append(ms)
                self.all_chats.append(ms)
            if f["event"] == "like":
                self.likes.append((ms, f.get("hearts", 0), optional))
            if f["event"] == "donation":
                self.donations[pid].append((ms, f.get("donated", 0), optional))
        for lists in (self.signs, self.donations, self.chats):
            for v in lists.values():
                v.sort()
        self.all_chats.sort()
        self.likes.sort()
        self.names = collections.defaultdict(set)  # the name a reply calls them -> pids
        for pid, nick in self.nickname.items():
            self.names[nick or NOBODY].add(pid)

    def name(self, pid):
        return self.nickname.get(pid) or NOBODY

    def who(self, token):
        """The people a name in a reply may be: their name, or a first part
        of it cut with "…"."""
        found = set(self.names.get(token, ()))
        if token.endswith("…") and len(token) > 1:
            head = token[:-1]
            for name, pids in self.names.items():
                if name.startswith(head) and name != head:
                    found |= pids
        return found

    def reached_at(self, steps, amounts):
        """When a running total of (ms, amount, optional) first reached
        `steps`: (at, at counting only the frames the bot surely read)."""
        out = []
        for skip_optional in (False, True):
            total, at = 0, None
            for ms, amount, optional in amounts:
                if skip_optional and optional:
                    continue
                total += amount
                if total >= steps:
                    at = ms
                    break
            out.append(at)
        return out


def split_names(middle, who, limit=64):
    """The ways `middle` reads as names joined as a merged reply joins them
    (", " between, " and " before the last), each name someone `who` knows:
    a list of parses, each a list of (name, people). A nickname may hold
    ", " or " and ": every split is tried against the candidates, never
    one blindly. The whole as one name comes first."""
    out = []
    whole = who(middle)
    if whole:
        out.append([(middle, whole)])

    def commas(text, acc):
        if len(out) >= limit:
            return
        found = who(text)
        if found:
            yield acc + [(text, found)]
        start = 0
        while True:
            i = text.find(", ", start)
            if i < 0:
                return
            head = text[:i]
            people = who(head)
            if people:
                yield from commas(text[i + 2:], acc + [(head, people)])
            start = i + 1

    start = 0
    while len(out) < limit:
        i = middle.find(AND, start)
        if i < 0:
            break
        last = middle[i + len(AND):]
        last_people = who(last)
        if last_people:
            for parse in commas(middle[:i], []):
                out.append(parse + [(last, last_people)])
                if len(out) >= limit:
                    break
        start = i + 1
    return out


def check_replies(chat, frames, ledger, client_id, speed, jumps=(), slack_ms=5_000,
                  optional_ids=frozenset(), fresh=None):
    """Judges every message of the reference kit's replies the bot posted
    (the emulator's chat ledger, GET /_emulator/chat) against the frames
    written to it: each names only people who did that thing in that
    broadcast before it (arrived: joined or chatted; donated; commanded:
    chatted), and went out within its kind's freshness of it (real time:
    emulator time over `speed`, clock jumps left out, plus `slack_ms` for
    the way to the bot and back). A milestone was reached before it and
    announced within its freshness; `!top` lists donors of that broadcast.
    Frames in `optional_ids` (written to a stopped bot, maybe never read)
    may explain a late reply, never an early one.
    Returns (problems, replies): replies a list of dicts {atMs, liveId,
    message, what, kind, named: [(pid or None, name, ok)], late}."""
    fresh = dict(FRESH_MS, **(fresh or {}))
    people_of = {}
    for b in ledger.get("broadcasts", []):
        for bot in b.get("bots", []):
            if bot.get("clientId") == client_id:
                people_of[b.get("liveId")] = (bot.get("totals") or {}).get("people") or {}
    cache = {}

    def broadcast(live):
        if live not in cache:
            cache[live] = Broadcast(live, people_of.get(live, {}), frames, optional_ids)
        return cache[live]

    problems, replies = [], []
    named = collections.defaultdict(set)  # (liveId, what) -> people named so far
    for record in chat:
        if record.get("clientId", client_id) != client_id:
            continue
        message, at, live = record.get("message", ""), record.get("atMs", 0), record.get("liveId")
        found = classify_reply(message)
        if found is None:
            continue
        what, kind, fields = found
        b = broadcast(live)
        bound = fresh[kind] + slack_ms
        reply = {"atMs": at, "liveId": live, "message": message, "what": what, "kind": kind,
                 "named": [], "late": False}
        replies.append(reply)
        said = f"broadcast {live}: {kind} {message!r} (at {at})"

        def age(t):
            return real_ms(t, at, speed, jumps)

        def judge_person(pid, times, verb):
            """(ok, why) of naming pid for something done at `times` (sorted
            (ms, optional) or ms)."""
            before = [t if isinstance(t, tuple) else (t, False) for t in times]
            before = [t for t in before if t[0] <= at]
            if not before:
                return False, f"names {b.name(pid)!r} ({pid}), who had not {verb} in that broadcast before it"
            if kind == "welcome":
                # The first sign greets: the bot may have missed the first
                # (written to a stopped bot), never seen one before it.
                firsts = [before[0]] + [t for t in before if not t[1]][:1]
                ok = any(age(t[0]) <= bound for t in firsts)
                latest = firsts[-1][0]
            else:
                ok = age(before[-1][0]) <= bound
                latest = before[-1][0]
            if not ok:
                return False, (f"names {b.name(pid)!r} ({pid}) {age(latest) / 1000:.1f} s after they "
                               f"{verb} (freshness {fresh[kind] / 1000:.0f} s)")
            return True, ""

        if what == "donated":
            # Several people may share a nickname: the one who reached it.
            name, reached = fields["nickname"], int(fields["reached"])
            verdicts = []
            for pid in sorted(b.who(name)):
                at_all, at_read = b.reached_at(reached, b.donations.get(pid, []))
                if at_all is None or at_all > at:
                    verdicts.append((pid, False, False, f": {name!r} ({pid}) had not given {reached} before it"))
                elif age(at_read if at_read is not None else at_all) > bound:
                    verdicts.append((pid, False, True, f": sent {age(at_all) / 1000:.1f} s after {name!r} "
                                     f"({pid}) gave {reached} (freshness {fresh[kind] / 1000:.0f} s)"))
                else:
                    verdicts.append((pid, True, False, ""))
            if not verdicts:
                problems.append(f"{said} names {name!r}: nobody of that broadcast is called that")
                reply["named"].append((None, name, False))
                continue
            pid, ok, late, why = ([v for v in verdicts if v[1]] or verdicts)[0]
            reply["named"].append((pid, name, ok))
            reply["late"] = late
            if not ok:
                problems.append(f"{said}{why}")
        elif what in ("welcome", "welcome_back", "thanks", "hello"):
            middle = fields.get("nicknames") or fields.get("nickname") or ""
            verb, times_of = {
                "welcome": ("arrived", lambda p: b.signs.get(p, [])),
                "welcome_back": ("arrived", lambda p: b.signs.get(p, [])),
                "thanks": ("donated", lambda p: [(t, o) for t, _, o in b.donations.get(p, [])]),
                "hello": ("chatted", lambda p: b.chats.get(p, [])),
            }[what]
            merged = what in ("welcome", "welcome_back", "thanks")
            parses = split_names(middle, b.who) if merged else (
                [[(middle, b.who(middle))]] if b.who(middle) else [])
            if not parses:
                problems.append(f"{said} names {middle!r}: nobody of that broadcast is called that")
                reply["named"].append((None, middle, False))
                continue
            best = None
            for parse in parses:
                verdicts = []
                taken = set(named[(live, what)])
                for name, pids in parse:
                    if len(parse) > 1 and utf16_len(name) > MERGED_NAME_MAX:
                        verdicts.append((sorted(pids)[0], name, False,
                                         f"names {name!r}, longer than {MERGED_NAME_MAX} UTF-16 units in a merged reply"))
                        continue
                    tried = [(pid,) + judge_person(pid, times_of(pid), verb) for pid in sorted(pids)]
                    # Several people may share a nickname: the first to do
                    # it of those not named yet for this broadcast and kind.
                    def first(pid):
                        times = times_of(pid)
                        t = times[0] if times else (0,)
                        return t[0] if isinstance(t, tuple) else t

                    good = sorted((t for t in tried if t[1]), key=lambda t: (t[0] in taken, first(t[0])))
                    pid, ok, why = (good or tried)[0]
                    taken.add(pid)
                    verdicts.append((pid, name, ok, why))
                if best is None or sum(not v[2] for v in verdicts) < sum(not v[2] for v in best):
                    best = verdicts
                if all(v[2] for v in best):
                    break
            for pid, name, ok, why in best:
                named[(live, what)].add(pid)
                reply["named"].append((pid, name, ok))
                if not ok:
                    problems.append(f"{said} {why}")
            reply["late"] = reply["late"] or any(not ok and "freshness" in why for _, _, ok, why in best)
        elif what == "hearts":
            reached = int(fields["reached"])
            at_all, at_read = b.reached_at(reached, b.likes)
            if at_all is None or at_all > at:
                problems.append(f"{said}: the broadcast had not {reached} hearts before it")
            elif age(at_read if at_read is not None else at_all) > bound:
                problems.append(f"{said}: sent {age(at_all) / 1000:.1f} s after {reached} hearts were "
                                f"reached (freshness {fresh[kind] / 1000:.0f} s)")
                reply["late"] = True
        elif what == "top":
            asked = [t for t in b.all_chats if t <= at]
            if not asked:
                problems.append(f"{said}: nobody had chatted in that broadcast before it")
            elif age(asked[-1]) > bound:
                problems.append(f"{said}: sent {age(asked[-1]) / 1000:.1f} s after the last chat "
                                f"(freshness {fresh[kind] / 1000:.0f} s)")
                reply["late"] = True
            listed = fields.get("top", "")
            if listed != NO_DONORS:
                for pid, name, ok, why in top_donors(listed, b, at):
                    reply["named"].append((pid, name, ok))
                    if not ok:
                        problems.append(f"{said} {why}")
    return problems, replies


def top_donors(listed, b, at):
    """[(pid, name, ok, why)] of a `{top}` list: "1. <nickname> <donated> · 2. …"
    (a donor without a nickname by id; the list may be cut with "…")."""
    import re
    out, rank, rest = [], 1, listed
    while rest:
        head = f"{rank}. "
        if not rest.startswith(head):
            if rest != "…":
                out.append((None, rest, False, f"lists {rest!r} where donor {rank} should be"))
            break
        rest = rest[len(head):]
        nxt = rest.find(f" · {rank + 1}. ")
        entry, rest = (rest, "") if nxt < 0 else (rest[:nxt], rest[nxt + 3:])
        m = re.match(r"^(.*) (\d+)$", entry, re.S)
        name = m.group(1) if m else entry
        pids = {p for p, n in b.nickname.items() if (n or p) == name}
        if not m and entry.endswith("…"):
            pids = {p for p, n in b.nickname.items() if (n or p).startswith(entry[:-1])}
            name = entry
        donors = [p for p in sorted(pids) if any(t <= at for t, _, _ in b.donations.get(p, []))]
        if donors:
            out.append((donors[0], name, True, ""))
        else:
            out.append((sorted(pids)[0] if pids else None, name, False,
                        f"lists {name!r} among the top donors, who had not donated in that broadcast before it"))
        rank += 1
    return out


def clock_jumps(samples, speed, at_least_ms=60_000):
    """Clock jumps seen in (real seconds, emulator ms) samples taken while the
    scenario ran: (emulator ms before, jump size) where emulator time ran
    more than `at_least_ms` ahead of `speed` times real time."""
    out = []
    for (r0, e0), (r1, e1) in zip(samples, samples[1:]):
        extra = (e1 - e0) - (r1 - r0) * 1000 * speed
        if extra > at_least_ms:
            out.append((e0, extra))
    return out


def read_ends(path):
    """The liveIds of the broadcast ends the bot said it read."""
    try:
        return [json.loads(line).get("liveId") for line in open(path) if line.strip()]
    except (OSError, ValueError):
        return []


def main():
    parser = argparse.ArgumentParser(
        prog="scripts/e2e.py",
        description="Runs one language's reference bot against `onair serve` and judges it "
        "(scripts/e2e <lang> calls it; see scripts/e2e.d/README.md).",
    )
    parser.add_argument("--lang", required=True)
    parser.add_argument("--onair", required=True)
    parser.add_argument("--bot-cmd", required=True)
    parser.add_argument("--scenario", default="faulty")
    parser.add_argument("--replay", metavar="CASSETTE",
                        help="play a cassette of `onair record` (onair serve --replay) instead of "
                        "the scenario; the bot runs once, without the restart")
    parser.add_argument("--speed", type=float, default=float(os.environ.get("ONAIR_E2E_SPEED", "4")))
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--watchdog-ms", type=int, default=10_000)
    parser.add_argument("--restart-at", type=float, default=0.45,
                        help="restart the bot once this share of the scenario has run "
                        "(at the first moment after it that frames flow)")
    parser.add_argument("--signal", choices=("INT", "TERM"), default="INT",
                        help="the signal that stops the bot for the restart (default INT, "
                        "as Ctrl-C; the final stop is always TERM)")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix=f"onair-e2e-{args.lang}-")
    serve_log = open(os.path.join(work, "serve.log"), "w")
    source = ["--replay", args.replay] if args.replay else ["--scenario", args.scenario]
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", *source, "--speed", str(args.speed)],
        stdout=subprocess.PIPE,
        stderr=serve_log,
    )
    bot = None
    try:
        ready, _, _ = select.select([serve.stdout], [], [], 30)
        if not ready:
            print("e2e: onair serve did not say where it is within 30 s", file=sys.stderr)
            return 1
        info = json.loads(serve.stdout.readline())
        control = info["controlUrl"]
        client_id = info["clientId"]
        consent = http_json(f"{control}/consent", {})
        ends_out = os.path.join(work, "ends.jsonl")
        env = dict(os.environ)
        env.pop("ONAIR_CODE", None)
        env.update(
            ONAIR_BASE_URL=info["baseUrl"],
            ONAIR_CLIENT_ID=client_id,
            ONAIR_CLIENT_SECRET=info["clientSecret"],
            ONAIR_REDIRECT_URI=info["redirectUri"],
            ONAIR_TOKENS_FILE=os.path.join(work, "tokens.json"),
            ONAIR_STATE_FILE=os.path.join(work, "state.json"),
            ONAIR_ENDS_OUT=ends_out,
            ONAIR_WATCHDOG_MS=str(args.watchdog_ms),
        )
        bot_log_path = os.path.join(work, "bot.log")
        bot_log = open(bot_log_path, "w")
        started = time.monotonic()

        def mark():
            return http_json(f"{control}/mark", {})["writeSeq"]

        def start(run, code):
            run_env = dict(env, ONAIR_TALLY_OUT=os.path.join(work, f"tally-{run}.json"))
            if code is not None:
                run_env["ONAIR_CODE"] = code
            bot_log.write(f"==> run {run}\n")
            bot_log.flush()
            return subprocess.Popen(
                ["bash", "-c", args.bot_cmd],
                env=run_env,
                stdout=bot_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

        def stop(process, run, sig):
            """Takes a mark, signals the bot's process group (as a terminal's
            Ctrl-C does), waits for it: (mark, the run's output or None after
            a failure, said; seconds from the signal to the exit)."""
            at = mark()
            # A frame numbered before the mark was handed to the emulator's
            # writer, which puts it on the socket at once, or in pieces
            # (the wire variation's chunkBytes): give it 50 ms to be there
            # whole. What is written meanwhile is after the mark: allowed
            # to be missed, said.
            time.sleep(0.05)
            signalled = time.monotonic()
            os.killpg(process.pid, sig)
            try:
                code = process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                print(f"e2e: the bot (run {run}) did not exit within 20 s of {sig.name}")
                return at, None, 20.0
            took = time.monotonic() - signalled
            if code != 0:
                print(f"e2e: the bot (run {run}) exited with {code} on {sig.name}; log: {bot_log_path}")
                print(open(bot_log_path).read()[-3000:])
                return at, None, took
            path = os.path.join(work, f"tally-{run}.json")
            try:
                return at, json.load(open(path)), took
            except (OSError, ValueError) as e:
                print(f"e2e: no readable tally at {path}: {e}")
                return at, None, took

        restart_signal = signal.SIGINT if args.signal == "INT" else signal.SIGTERM
        runs, marks = [], []
        bot = start(1, consent["code"])
        run_start = 0
        restart = None
        samples = []  # (real s, emulator ms): the scenario's clock jumps, for the replies
        while True:
            progress = http_json(f"{control}/scenario")
            samples.append((time.monotonic(), http_json(f"{control}/clock")["nowMs"]))
            if progress.get("done"):
                break
            if bot.poll() is not None:
                print(f"e2e: the {args.lang} bot exited early ({bot.returncode}); log: {bot_log_path}")
                print(open(bot_log_path).read()[-3000:])
                return 1
            if time.monotonic() - started > args.timeout:
                print(f"e2e: the scenario did not finish within {args.timeout} s: {progress}")
                return 1
            total = max(progress.get("total", 0), 1)
            if restart is None and not args.replay and progress.get("position", 0) >= args.restart_at * total:
                state = http_json(f"{control}/state")
                if state.get("onAir") and state.get("openStreams", 0) > 0:
                    # A busy moment: events reached the bot in the last 100 ms.
                    # Emulator time runs on: what is written after the mark
                    # may be lost with the stopped process, and is said.
                    since = mark()
                    time.sleep(0.1)
                    recent = http_json(f"{control}/frames?clientId={client_id}&since={since}")
                    flowing = sum(1 for f in recent["frames"] if contributions(f))
                    if flowing >= 3:
                        at, output, took = stop(bot, 1, restart_signal)
                        if output is None:
                            return 1
                        runs.append(output)
                        marks.append((run_start, at))
                        run_start = mark()
                        bot = start(2, None)
                        restart = (at, took, flowing)
                    time.sleep(0.02)
                    continue
            time.sleep(0.2)
        if restart is None and not args.replay:
            print("e2e: the scenario ended before a busy moment after the restart point")
            return 1
        # Wait until the bot read the last broadcast's end, if it was sent one.
        ledger = http_json(f"{control}/ledger")
        last_end = None
        for broadcast in ledger.get("broadcasts", []):
            for entry in broadcast.get("bots", []):
                if entry.get("clientId") == client_id and any(
                    c.get("end") == "LIVE_ENDED" for c in entry.get("connections", [])
                ):
                    last_end = broadcast.get("liveId")
        if last_end is not None:
            deadline = time.monotonic() + 30
            while last_end not in read_ends(ends_out):
                if time.monotonic() > deadline:
                    print(
                        f"e2e: the bot did not read the end of broadcast {last_end} "
                        f"(LIVE_ENDED was delivered) within 30 s; it read: {read_ends(ends_out)}"
                    )
                    return 1
                time.sleep(0.1)
        else:
            time.sleep(1.5)  # no end was sent: the last frames reach the bot
        at, output, _ = stop(bot, 1 if restart is None else 2, signal.SIGTERM)
        if output is None:
            return 1
        runs.append(output)
        marks.append((run_start, at))
        elapsed = time.monotonic() - started
        tally = merge_runs(runs)
        ledger = http_json(f"{control}/ledger")
        frames = http_json(f"{control}/frames?clientId={client_id}")["frames"]
        requests = http_json(f"{control}/requests")["requests"]
        problems, truth, notes = judge_tally(ledger, client_id, tally, frames, marks)
        for live, person in greeted_twice(tally["arrivals"]):
            problems.append(f"broadcast {live}: {person} greeted as a first arrival twice")
        problems += check_frozen(truth, args.speed, args.watchdog_ms)
        if not args.replay:
            # A replay answers the recorded answers (a recorded 401 makes a
            # bot refresh with a good token) at the recorded times (frames'
            # ids and times are the recording's): the rules of requests and
            # the replies' freshness judge the live service only.
            problems += check_requests(requests, truth, args.speed)
        chat = http_json(f"{control}/chat")["messages"]
        optional_ids = {
            f.get("id")
            for _, optional in classify_frames(frames, truth, marks).values()
            for f in optional
        }
        found, replies = check_replies(
            chat, frames, ledger, client_id, args.speed,
            jumps=clock_jumps(samples, args.speed),
            slack_ms=args.watchdog_ms + 5_000,  # a stalled stream's frames come late
            optional_ids=optional_ids,
        )
        if not args.replay:
            problems += found
        events = sum(
            sum(conn.get("events", {}).values())
            for _, bot_entry in truth
            for conn in bot_entry.get("connections", [])
        )
        people = sum(len(b["totals"].get("people", {})) for _, b in truth)
        by_call = collections.Counter(f"{r['method']} {r['path']}" for r in requests)
        calls = ", ".join(f"{call} {n}" for call, n in by_call.most_common())
        greeted = sum(1 for a in tally["arrivals"] if a.get("kind") == "first")
        if restart is None:
            how = f"the cassette {args.replay} replayed"
        else:
            at, took, flowing = restart
            how = (
                f"restarted once on SIG{args.signal} while events flowed "
                f"({flowing} in the 100 ms before; mark {at}, exited {took:.2f} s after the signal)"
            )
        summary = (
            f"{args.lang}: {len(truth)} broadcast(s), {events} events delivered, {people} people, "
            f"{greeted} greeted, {len(replies)} replies "
            f"({sum(len(r['named']) for r in replies)} names){'' if args.replay else ' judged'}, {how}, "
            f"{len(requests)} requests ({calls}), {elapsed:.1f} s"
        )
        if not notes:
            notes.append("nothing was written to the stopped bot after the signal")
        for note in notes:
            print(f"e2e: after the signal: {note}")
        if problems:
            print(f"e2e FAILED — {summary}")
            for p in problems[:20]:
                print(f"  - {p}")
            print(f"  (logs: {work})")
            print("0 passed, 1 failed")
            return 1
        if args.replay:
            print(
                f"e2e ok — {summary}: every frame the replay wrote is in the tally, none "
                "beyond its ledger, nobody greeted twice (requests and replies' freshness not "
                "judged: the answers and times are the recording's)"
            )
            print("1 passed, 0 failed")
            return 0
        print(
            f"e2e ok — {summary}: every frame written before each stop is in the tally, "
            "none beyond the ledger, nobody greeted twice, every reply naming only people who "
            "did that thing before it, within its freshness, the frozen stream replaced, "
            "requests within the spec's rules"
        )
        print("1 passed, 0 failed")
        return 0
    finally:
        stop_all(bot, serve)


if __name__ == "__main__":
    sys.exit(main())
