#!/usr/bin/env python3
"""Runs one small bot against `onair serve --scenario quiet` and judges its
tally against the emulator's ledger (scripts/dist's install checks).

  scripts/dist.d/judge.py --onair BIN --label NAME [--cwd DIR] -- COMMAND...

The bot is given ONAIR_BASE_URL, ONAIR_CLIENT_ID, ONAIR_CLIENT_SECRET,
ONAIR_CODE and ONAIR_REDIRECT_URI (and, for the reference bots of
scripts/e2e.d/README.md, ONAIR_TOKENS_FILE, ONAIR_STATE_FILE,
ONAIR_TALLY_OUT, ONAIR_ENDS_OUT). Its tally is either printed: one JSON
object per line, `{"liveId":N, ...the tally's JSON form}`, when a broadcast
ends (a ten-line bot prints it and stops), or written to ONAIR_TALLY_OUT on
SIGTERM, which the judge sends once the bot has read the broadcast's end (a
reference bot). Exit 0 only when the bot exited 0 and its tally of every
broadcast equals the ledger's (scripts/e2e.py's compare_tally). Standard
library only.
"""

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e import compare_tally, http_json, read_ends, stop_all  # noqa: E402


def printed_tallies(output):
    out = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{") and '"liveId"' in line:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def main():
    parser = argparse.ArgumentParser(prog="scripts/dist.d/judge.py", description=__doc__.split("\n")[0])
    parser.add_argument("--onair", required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--cwd", default=None)
    parser.add_argument("--speed", type=float, default=8)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no bot command")

    work = tempfile.mkdtemp(prefix=f"onair-dist-{args.label}-")
    serve_log = open(os.path.join(work, "serve.log"), "w")
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", "--scenario", "quiet", "--speed", str(args.speed)],
        stdout=subprocess.PIPE,
        stderr=serve_log,
    )
    bot = None
    try:
        ready, _, _ = select.select([serve.stdout], [], [], 30)
        if not ready:
            print(f"{args.label}: onair serve did not say where it is within 30 s")
            return 1
        info = json.loads(serve.stdout.readline())
        control, client_id = info["controlUrl"], info["clientId"]
        consent = http_json(f"{control}/consent", {})
        ends_out = os.path.join(work, "ends.jsonl")
        tally_out = os.path.join(work, "tally.json")
        env = dict(os.environ)
        env.update(
            ONAIR_BASE_URL=info["baseUrl"],
            ONAIR_CLIENT_ID=client_id,
            ONAIR_CLIENT_SECRET=info["clientSecret"],
            ONAIR_REDIRECT_URI=info["redirectUri"],
            ONAIR_CODE=consent["code"],
            ONAIR_TOKENS_FILE=os.path.join(work, "tokens.json"),
            ONAIR_STATE_FILE=os.path.join(work, "state.json"),
            ONAIR_TALLY_OUT=tally_out,
            ONAIR_ENDS_OUT=ends_out,
        )
        log_path = os.path.join(work, "bot.log")
        started = time.monotonic()
        with open(log_path, "w") as log:
            bot = subprocess.Popen(command, cwd=args.cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
            signalled = False
            while bot.poll() is None:
                if time.monotonic() - started > args.timeout:
                    print(f"{args.label}: the bot did not finish within {args.timeout} s; log: {log_path}")
                    return 1
                # A reference bot runs until told: once it read the end of
                # every broadcast the scenario played, SIGTERM.
                if not signalled and http_json(f"{control}/scenario").get("done"):
                    ledger = http_json(f"{control}/ledger")
                    lives = [b.get("liveId") for b in ledger.get("broadcasts", [])]
                    if all(live in read_ends(ends_out) for live in lives):
                        time.sleep(1)  # a ten-line bot stops by itself meanwhile
                        if bot.poll() is None:
                            os.killpg(bot.pid, signal.SIGTERM)
                        signalled = True
                time.sleep(0.1)
        output = open(log_path).read()
        if bot.returncode != 0:
            print(f"{args.label}: the bot exited with {bot.returncode}; its output:\n{output[-3000:]}")
            return 1
        broadcasts = printed_tallies(output)
        if os.path.exists(tally_out):
            broadcasts += json.load(open(tally_out)).get("broadcasts", [])
        ledger = http_json(f"{control}/ledger")
        problems, truth = compare_tally(ledger, client_id, {"broadcasts": broadcasts})
        if not truth:
            problems.append("the ledger has no broadcast for the bot")
        if problems:
            print(f"{args.label}: FAILED, the tally differs from the ledger (logs: {work})")
            for p in problems:
                print(f"  - {p}")
            return 1
        totals = [bot_entry["totals"] for _, bot_entry in truth]
        print(
            f"{args.label}: tally = ledger ({len(truth)} broadcast(s), "
            f"{sum(len(t.get('people', {})) for t in totals)} people, "
            f"{sum(t.get('hearts', 0) for t in totals)} hearts, "
            f"{sum(t.get('donated', 0) for t in totals)} donated), "
            f"{time.monotonic() - started:.1f} s"
        )
        return 0
    finally:
        stop_all(bot, serve)


if __name__ == "__main__":
    sys.exit(main())
