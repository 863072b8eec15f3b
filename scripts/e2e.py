#!/usr/bin/env python3
"""The end-to-end check every language's bot goes through (scripts/e2e <lang>).
The bot's side of it is scripts/e2e.d/README.md.

1. Start `onair serve --json --scenario faulty --speed S` on an ephemeral
   127.0.0.1 port and read where it is from its first stdout line.
2. Get a consent code from the control API; start the bot with ONAIR_* set.
3. In the middle of a broadcast, restart it once: hold emulator time (so
   every frame written is read), SIGTERM (it writes its tally and arrivals
   to ONAIR_TALLY_OUT and exits 0), then the same command without
   ONAIR_CODE (it resumes from its token and state files), and let time run.
4. When the scenario is done, wait until the bot has read the last
   broadcast's end (its ONAIR_ENDS_OUT line), then SIGTERM it.
5. Merge both runs (by liveId, the later run's tally of a broadcast wins)
   and compare with the emulator's ledger (for this bot's client id,
   broadcast by broadcast, person by person; empty broadcasts skipped on
   both sides); check that nobody was greeted twice in one broadcast, that
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


def compare_tally(ledger, client_id, tally):
    """Problems found comparing the bot's broadcasts with the ledger's."""
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
    parser = argparse.ArgumentParser()
    parser.add_argument("--lang", required=True)
    parser.add_argument("--onair", required=True)
    parser.add_argument("--bot-cmd", required=True)
    parser.add_argument("--scenario", default="faulty")
    parser.add_argument("--speed", type=float, default=float(os.environ.get("ONAIR_E2E_SPEED", "4")))
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--watchdog-ms", type=int, default=10_000)
    parser.add_argument("--restart-at", type=float, default=0.45,
                        help="restart the bot once this share of the scenario has run")
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
        consent = http_json(f"{control}/consent", {})
        ends_out = os.path.join(work, "ends.jsonl")
        env = dict(os.environ)
        env.pop("ONAIR_CODE", None)
        env.update(
            ONAIR_BASE_URL=info["baseUrl"],
            ONAIR_CLIENT_ID=info["clientId"],
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

        def stop(process, run):
            """SIGTERM, then the run's output (None after a failure, said)."""
            os.killpg(process.pid, signal.SIGTERM)
            try:
                code = process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                print(f"e2e: the bot (run {run}) did not exit within 20 s of SIGTERM")
                return None
            if code != 0:
                print(f"e2e: the bot (run {run}) exited with {code}; log: {bot_log_path}")
                print(open(bot_log_path).read()[-3000:])
                return None
            path = os.path.join(work, f"tally-{run}.json")
            try:
                return json.load(open(path))
            except (OSError, ValueError) as e:
                print(f"e2e: no readable tally at {path}: {e}")
                return None

        runs = []
        bot = start(1, consent["code"])
        restarted = False
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
            if not restarted and progress.get("position", 0) >= args.restart_at * total:
                state = http_json(f"{control}/state")
                if state.get("onAir") and state.get("openStreams", 0) > 0:
                    # In the middle of a broadcast: stop it, start it again.
                    # Emulator time holds meanwhile, so the frames written
                    # before the SIGTERM are read (the ledger counts a frame
                    # once written; a process stopped with unread frames on
                    # its socket would lose them, as any restart does).
                    http_json(f"{control}/clock/pause", {})
                    time.sleep(0.5)
                    output = stop(bot, 1)
                    if output is None:
                        return 1
                    runs.append(output)
                    bot = start(2, None)
                    http_json(f"{control}/clock/resume", {})
                    restarted = True
            time.sleep(0.2)
        if not restarted:
            print("e2e: the scenario ended before the restart point (no broadcast on air)")
            return 1
        # Wait until the bot read the last broadcast's end, if it was sent one.
        ledger = http_json(f"{control}/ledger")
        last_end = None
        for broadcast in ledger.get("broadcasts", []):
            for entry in broadcast.get("bots", []):
                if entry.get("clientId") == info["clientId"] and any(
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
        output = stop(bot, 2)
        if output is None:
            return 1
        runs.append(output)
        elapsed = time.monotonic() - started
        tally = merge_runs(runs)
        ledger = http_json(f"{control}/ledger")
        requests = http_json(f"{control}/requests")["requests"]
        problems, truth = compare_tally(ledger, info["clientId"], tally)
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
        summary = (
            f"{args.lang}: {len(truth)} broadcast(s), {events} events delivered, {people} people, "
            f"{greeted} greeted, restarted once, {len(requests)} requests ({calls}), {elapsed:.1f} s"
        )
        if problems:
            print(f"e2e FAILED — {summary}")
            for p in problems[:20]:
                print(f"  - {p}")
            print(f"  (logs: {work})")
            print("0 passed, 1 failed")
            return 1
        print(
            f"e2e ok — {summary}: tally = ledger across the restart, nobody greeted twice, "
            "the frozen stream replaced, requests within the spec's rules"
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
