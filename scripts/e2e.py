#!/usr/bin/env python3
"""The end-to-end check every language's bot goes through (scripts/e2e <lang>).

1. Start `onair serve --json --scenario faulty --speed S` on an ephemeral
   127.0.0.1 port and read where it is from its first stdout line.
2. Get a consent code from the control API; start the bot with ONAIR_* set.
3. Wait until the scenario is done, let the last frames arrive, send SIGTERM;
   the bot writes {"broadcasts":[totals, ...]} to ONAIR_TALLY_OUT and exits 0.
4. Compare the bot's totals with the emulator's ledger (for this bot's
   client id, broadcast by broadcast, person by person; empty broadcasts are
   skipped on both sides), and check its requests in the emulator's log:
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


def check_requests(requests, truth, speed):
    """Problems found in the bot's requests (the emulator's log)."""
    problems = []
    token_posts = [r for r in requests if r["path"] == "/v1/oauth/token"]
    refreshes = max(0, len(token_posts) - 1)  # the first one is the code exchange
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lang", required=True)
    parser.add_argument("--onair", required=True)
    parser.add_argument("--bot-cmd", required=True)
    parser.add_argument("--scenario", default="faulty")
    parser.add_argument("--speed", type=float, default=float(os.environ.get("ONAIR_E2E_SPEED", "4")))
    parser.add_argument("--timeout", type=float, default=300)
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
        tally_out = os.path.join(work, "tally.json")
        env = dict(os.environ)
        env.update(
            ONAIR_BASE_URL=info["baseUrl"],
            ONAIR_CLIENT_ID=info["clientId"],
            ONAIR_CLIENT_SECRET=info["clientSecret"],
            ONAIR_CODE=consent["code"],
            ONAIR_REDIRECT_URI=info["redirectUri"],
            ONAIR_TALLY_OUT=tally_out,
        )
        bot_log_path = os.path.join(work, "bot.log")
        bot_log = open(bot_log_path, "w")
        started = time.monotonic()
        bot = subprocess.Popen(
            ["bash", "-c", args.bot_cmd],
            env=env,
            stdout=bot_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
            time.sleep(0.2)
        time.sleep(1.5)  # the last frames reach the bot
        os.killpg(bot.pid, signal.SIGTERM)
        try:
            code = bot.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(bot.pid, signal.SIGKILL)
            print("e2e: the bot did not exit within 20 s of SIGTERM")
            return 1
        elapsed = time.monotonic() - started
        if code != 0:
            print(f"e2e: the bot exited with {code}; log: {bot_log_path}")
            print(open(bot_log_path).read()[-3000:])
            return 1
        try:
            tally = json.load(open(tally_out))
        except (OSError, ValueError) as e:
            print(f"e2e: no readable tally at {tally_out}: {e}")
            return 1
        ledger = http_json(f"{control}/ledger")
        requests = http_json(f"{control}/requests")["requests"]
        problems, truth = compare_tally(ledger, info["clientId"], tally)
        problems += check_requests(requests, truth, args.speed)
        events = sum(
            sum(conn.get("events", {}).values())
            for _, bot_entry in truth
            for conn in bot_entry.get("connections", [])
        )
        people = sum(len(b["totals"].get("people", {})) for _, b in truth)
        by_call = collections.Counter(f"{r['method']} {r['path']}" for r in requests)
        calls = ", ".join(f"{call} {n}" for call, n in by_call.most_common())
        summary = (
            f"{args.lang}: {len(truth)} broadcast(s), {events} events delivered, {people} people, "
            f"{len(requests)} requests ({calls}), {elapsed:.1f} s"
        )
        if problems:
            print(f"e2e FAILED — {summary}")
            for p in problems[:20]:
                print(f"  - {p}")
            print(f"  (logs: {work})")
            print("0 passed, 1 failed")
            return 1
        print(f"e2e ok — {summary}: tally = ledger, requests within the spec's rules")
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
