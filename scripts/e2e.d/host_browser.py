#!/usr/bin/env python3
"""The host's dashboard in a real browser (scripts/test-host-browser).

`onair serve` with 6 DJs on the quiet scenario, `onair host`, each DJ
connected through /connect → consent → /callback (scripts/e2e.d/host.py's
helpers); then headless Chromium loads the dashboard, runs its script (the
live updates over SSE) and: a screenshot of the dashboard and of one bot's
page under target/; the rendered DOM must list every DJ's bot (its row,
its name, its state) and show one bot's page with its state card and event
log. Exit 0 only when it does. Standard library only.
"""

import argparse
import base64
import json
import os
import re
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2e  # noqa: E402
import host as judge  # noqa: E402

STATES = {"starting", "connected", "connecting", "waiting", "backing_off", "refreshing",
          "needs_consent", "stopped", "disabled"}


def chromium(*args, timeout=60):
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--window-size=1280,900", "--timeout=3000", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return out.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onair", required=True)
    parser.add_argument("--out", default="target")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="onair-host-browser-")
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", "--scenario", "quiet", "--speed", "1", "--djs", "5"],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"),
    )
    host = None
    try:
        ready, _, _ = select.select([serve.stdout], [], [], 30)
        if not ready:
            print("host browser: onair serve did not start")
            return 1
        info = json.loads(serve.stdout.readline())
        control, base = info["controlUrl"], info["baseUrl"]
        port = judge.free_port()
        url = f"http://127.0.0.1:{port}"
        app = e2e.http_json(f"{control}/apps", {"redirectUri": f"{url}/callback"})
        config = os.path.join(work, "host.toml")
        with open(config, "w") as f:
            f.write(f"""{judge.app_section(base, app["clientId"])}[host]
listen = "127.0.0.1:{port}"
start_spread_ms = 500
{judge.KIT}""")
        admin = secrets.token_urlsafe(24)
        env = dict(os.environ, ONAIR_HOST_CLIENT_SECRET=app["clientSecret"],
                   ONAIR_HOST_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
                   ONAIR_HOST_ADMIN_TOKEN=admin)
        host = judge.Host(args.onair, config, env, os.path.join(work, "host.log"), url, admin)
        host.start()
        djs = [d["dj"] for d in e2e.http_json(f"{control}/djs")["djs"]]
        bots = {dj: judge.connect(url, dj)[0] for dj in djs}
        # Some events first, so the pages have something to show.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            views = host.api("/api/bots")["bots"]
            if all(v["status"] and v["status"]["counters"]["chat"] > 0 for v in views):
                break
            time.sleep(0.3)

        os.makedirs(args.out, exist_ok=True)
        shot = os.path.abspath(os.path.join(args.out, "host-dashboard.png"))
        bot_shot = os.path.abspath(os.path.join(args.out, "host-bot.png"))
        chromium(f"--screenshot={shot}", f"{url}/")
        first = bots[djs[0]]
        chromium(f"--screenshot={bot_shot}", f"{url}/bots/{first}")
        dom = chromium("--dump-dom", f"{url}/")
        bot_dom = chromium("--dump-dom", f"{url}/bots/{first}")

        problems = []
        for path in (shot, bot_shot):
            if not os.path.exists(path) or os.path.getsize(path) < 5000:
                problems.append(f"no screenshot at {path}")
        if "<table id=\"bots\"" not in dom:
            problems.append("the dashboard's table is not in the DOM")
        for dj, bot in bots.items():
            row = re.search(rf'<tr id="bot-{bot}"[^>]*data-state="([a-z_]+)"[^>]*>(.*?)</tr>', dom, re.S)
            if not row:
                problems.append(f"{dj}'s bot {bot}: no row in the rendered DOM")
                continue
            state, cells = row.group(1), row.group(2)
            if state not in STATES:
                problems.append(f"{dj}'s bot {bot}: unknown state {state!r}")
            if f'href="/bots/{bot}"' not in cells:
                problems.append(f"{dj}'s bot {bot}: no link to its page")
            if not re.search(r'class="state state-[a-z_]+">[^<]+<', cells):
                problems.append(f"{dj}'s bot {bot}: its state is not shown")
        if 'id="card"' not in bot_dom or 'id="log"' not in bot_dom:
            problems.append("the bot's page has no state card or event log")
        if "<li data-kind=" not in bot_dom:
            problems.append("the bot's page shows no event")
        for secret in (admin, app["clientSecret"], env["ONAIR_HOST_KEY"]):
            if secret in dom or secret in bot_dom:
                problems.append("a secret is on a page")
        code = host.stop()
        host = None
        if code != 0:
            problems.append(f"the host exited with {code} on SIGTERM")
        rows = len(re.findall(r'<tr id="bot-\d+"', dom))
        if problems:
            print(f"host browser FAILED ({rows} rows; logs: {work})")
            for p in problems:
                print(f"  - {p}")
            print("0 passed, 1 failed")
            return 1
        print(f"host browser ok — Chromium rendered {rows} bots for {len(djs)} DJs, each with its "
              f"state; screenshots: {shot}, {bot_shot}")
        print("1 passed, 0 failed")
        return 0
    finally:
        if host is not None and host.proc is not None and host.proc.poll() is None:
            os.killpg(host.proc.pid, signal.SIGKILL)
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=10)
        except subprocess.TimeoutExpired:
            serve.kill()


if __name__ == "__main__":
    sys.exit(main())
