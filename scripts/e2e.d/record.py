#!/usr/bin/env python3
"""Records a night on air into a cassette: `onair serve --json --scenario
faulty` stands in for the service, `onair auth exchange` saves a token pair
from a consent code, `onair record --out CASSETTE` records until LIVE_ENDED.
scripts/e2e replay runs it, then plays the cassette to each language's bot.

    python3 scripts/e2e.d/record.py --onair target/debug/onair --out night.cassette
"""

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2e  # noqa: E402


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def main():
    parser = argparse.ArgumentParser(
        prog="scripts/e2e.d/record.py",
        description="Records `onair serve --scenario faulty` with `onair record` into a cassette.",
    )
    parser.add_argument("--onair", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--scenario", default="faulty")
    parser.add_argument("--speed", default="10")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="onair-record-")
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", "--scenario", args.scenario, "--speed", args.speed],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        ready, _, _ = select.select([serve.stdout], [], [], 30)
        if not ready:
            print("record: onair serve did not say where it is within 30 s", file=sys.stderr)
            return 1
        info = json.loads(serve.stdout.readline())
        env = dict(os.environ)
        env.update(
            ONAIR_BASE_URL=info["baseUrl"],
            ONAIR_CLIENT_ID=info["clientId"],
            ONAIR_CLIENT_SECRET=info["clientSecret"],
            ONAIR_TOKENS=os.path.join(work, "tokens.json"),
        )
        code = post(f"{info['controlUrl']}/consent", {})["code"]
        subprocess.run(
            [args.onair, "auth", "exchange", "--code", code, "--redirect-uri", info["redirectUri"]],
            env=env, check=True, stdout=subprocess.DEVNULL,
        )
        done = subprocess.run(
            [args.onair, "record", "--out", args.out], env=env, timeout=args.timeout,
        )
        return done.returncode
    finally:
        e2e.stop_all(None, serve)


if __name__ == "__main__":
    sys.exit(main())
