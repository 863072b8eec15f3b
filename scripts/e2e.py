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


def check_requests(requests, truth, speed):
    """Problems found in the bot's requests (the emulator's log)."""
    problems = []
    token_posts = [r for r in requests if r["path"] == "/v1/oauth/token"]
    exchanges = [r for r in token_posts if r.get("grant") == "authorization_code"]
    if len(exchanges) != 1:
        problems.append(f"{len(exchanges)} code exchanges (one consent, one exchange)")
    refreshes = sum(1 for r in token_posts if r.get("grant") == "refresh_token")
    expiries = sum(
        1
        for _, bot in truth
        for conn in bot.get("connections", [])
        if conn.get("end") == "TOKEN_EXPIRED"
    )
    if refreshes != expiries:
        problems.append(f"{refreshes} refresh(es) for {expiries} token expiry(ies)")

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
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", "--scenario", args.scenario, "--speed", str(args.speed)],
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
        while True:
            progress = http_json(f"{control}/scenario")
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
            if restart is None and progress.get("position", 0) >= args.restart_at * total:
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
        if restart is None:
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
        at, output, _ = stop(bot, 2, signal.SIGTERM)
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
        problems += check_requests(requests, truth, args.speed)
        events = sum(
            sum(conn.get("events", {}).values())
            for _, bot_entry in truth
            for conn in bot_entry.get("connections", [])
        )
        people = sum(len(b["totals"].get("people", {})) for _, b in truth)
        by_call = collections.Counter(f"{r['method']} {r['path']}" for r in requests)
        calls = ", ".join(f"{call} {n}" for call, n in by_call.most_common())
        greeted = sum(1 for a in tally["arrivals"] if a.get("kind") == "first")
        at, took, flowing = restart
        summary = (
            f"{args.lang}: {len(truth)} broadcast(s), {events} events delivered, {people} people, "
            f"{greeted} greeted, restarted once on SIG{args.signal} while events flowed "
            f"({flowing} in the 100 ms before; mark {at}, exited {took:.2f} s after the signal), "
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
        print(
            f"e2e ok — {summary}: every frame written before each stop is in the tally, "
            "none beyond the ledger, nobody greeted twice, the frozen stream replaced, "
            "requests within the spec's rules"
        )
        print("1 passed, 0 failed")
        return 0
    finally:
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


if __name__ == "__main__":
    sys.exit(main())
