#!/usr/bin/env python3
"""The host's load run (scripts/bench-host): many DJs' bots in one `onair host`
process against `onair serve --djs N-1` at real speed, each DJ connected
through /connect → consent → /callback, events flowing to all of them.

Prints: events delivered (the ledger) and handled (the host's metrics), DJs
whose tally differs from the ledger (0 lost means 0 here), the host's RSS
per bot, its CPU per 1 000 events/s while every bot is connected, and the
p99 delay from an event's server timestamp to its handler (over that steady
window, and over the whole run with the connect burst). Not part of the
test command (it takes minutes and wants a quiet machine). Standard library
only.
"""

import argparse
import base64
import concurrent.futures
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
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "e2e.d"))
import e2e  # noqa: E402
import host as judge  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def proc_stat(pid):
    """(CPU seconds, RSS bytes) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss


def metrics(url, admin):
    """/metrics (the admin's token)."""
    return judge.parse_metrics(judge.get(f"{url}/metrics", {"Authorization": f"Bearer {admin}"}))


def events_handled(m):
    return sum(v for k, v in m.items()
               if k.startswith("onair_host_events_total") and 'kind="end"' not in k)


def delay_buckets(m):
    """The emit-to-handler delay histogram: sorted (le seconds, cumulative count)."""
    return sorted(
        (float(re.search(r'le="([^"]+)"', k).group(1).replace("+Inf", "inf")), v)
        for k, v in m.items() if k.startswith("onair_host_event_delay_seconds_bucket")
    )


def p99(m, since=None):
    """The p99 bucket of the histogram, over what was observed after `since`
    (an earlier scrape) when given."""
    buckets = delay_buckets(m)
    if since is not None:
        before = dict(delay_buckets(since))
        buckets = [(le, v - before.get(le, 0)) for le, v in buckets]
    total = buckets[-1][1] if buckets else 0
    for le, count in buckets:
        if total and count >= 0.99 * total:
            return le, total
    return None, total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onair", default="target/release/onair")
    parser.add_argument("--djs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=10, help="events per second per DJ")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--people", type=int, default=50)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="onair-bench-host-")
    count = int(args.rate * args.seconds)
    scenario = {
        "name": "bench-host",
        "steps": [
            {"do": "state", "botManager": True},
            {"do": "liveStart", "title": "bench"},
            {"do": "waitForStream", "timeoutMs": 300000},
            {"do": "emit", "event": "chat", "data": {"isDj": True, "message": "go"}},
            {"do": "generate", "seed": 1, "count": count, "intervalMs": round(1000 / args.rate),
             "people": args.people, "djChatEvery": 0},
            {"afterMs": 2000, "do": "liveEnd"},
        ],
    }
    scenario_path = os.path.join(work, "scenario.json")
    json.dump(scenario, open(scenario_path, "w"))
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", "--scenario", scenario_path, "--speed", "1",
         "--djs", str(args.djs - 1)],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"),
    )
    host = None
    try:
        ready, _, _ = select.select([serve.stdout], [], [], 60)
        if not ready:
            print("bench-host: onair serve did not start")
            return 1
        info = json.loads(serve.stdout.readline())
        control, base = info["controlUrl"], info["baseUrl"]
        port = judge.free_port()
        url = f"http://127.0.0.1:{port}"
        app = e2e.http_json(f"{control}/apps", {"redirectUri": f"{url}/callback"})
        client_id = app["clientId"]
        config = os.path.join(work, "host.toml")
        with open(config, "w") as f:
            f.write(f"""{judge.app_section(base, client_id)}[host]
listen = "127.0.0.1:{port}"
{judge.KIT}""")
        admin = secrets.token_urlsafe(24)
        env = dict(os.environ, ONAIR_HOST_CLIENT_SECRET=app["clientSecret"],
                   ONAIR_HOST_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
                   ONAIR_HOST_ADMIN_TOKEN=admin, ONAIR_HOST_LOG="warn")
        host = judge.Host(args.onair, config, env, os.path.join(work, "host.log"), url, admin)
        host.start()
        time.sleep(1)
        _, rss0 = proc_stat(host.proc.pid)

        djs = [d["dj"] for d in e2e.http_json(f"{control}/djs")["djs"]]
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            bots = dict(zip(djs, (b for b, _ in pool.map(lambda dj: judge.connect(url, dj), djs))))
        print(f"bench-host: {len(bots)} DJs connected through consent in {time.monotonic() - t0:.1f} s")

        # Steady state: every bot connected; measure a window of it.
        deadline = time.monotonic() + 120
        while True:
            m = metrics(url, admin)
            connected = m.get('onair_host_bots{state="connected"}', 0)
            if connected >= len(djs):
                break
            if time.monotonic() > deadline:
                print(f"bench-host: only {connected:.0f} of {len(djs)} bots connected after 120 s")
                break
            time.sleep(0.5)
        window = min(30.0, max(5.0, args.seconds - (time.monotonic() - t0) - 5))
        cpu1, rss1 = proc_stat(host.proc.pid)
        steady1 = metrics(url, admin)
        ev1, w1 = events_handled(steady1), time.monotonic()
        ecpu1, _ = proc_stat(serve.pid)
        peak = rss1
        end = time.monotonic() + window
        while time.monotonic() < end:
            time.sleep(1)
            peak = max(peak, proc_stat(host.proc.pid)[1])
        cpu2, rss2 = proc_stat(host.proc.pid)
        steady2 = metrics(url, admin)
        ev2, w2 = events_handled(steady2), time.monotonic()
        steady_le, steady_n = p99(steady2, since=steady1)
        ecpu2, _ = proc_stat(serve.pid)
        rate = (ev2 - ev1) / (w2 - w1)
        host_cores = (cpu2 - cpu1) / (w2 - w1)
        emu_cores = (ecpu2 - ecpu1) / (w2 - w1)

        # The end: the scenario done, every bot read LIVE_ENDED.
        deadline = time.monotonic() + args.seconds + 300
        while not e2e.http_json(f"{control}/scenario").get("done"):
            if time.monotonic() > deadline:
                print("bench-host: the scenario did not finish")
                return 1
            time.sleep(1)
        deadline = time.monotonic() + 60
        while True:
            views = host.api("/api/bots")["bots"]
            waiting = [v for v in views if v["state"] == "connected"]
            if not waiting or time.monotonic() > deadline:
                break
            time.sleep(1)
        final = metrics(url, admin)
        le, observed = p99(final)

        def judge_dj(dj):
            ledger = e2e.http_json(
                f"{control}/ledger?dj={urllib.parse.quote(dj)}&clientId={client_id}")
            api = host.api(f"/api/bots/{bots[dj]}?events=0")
            problems, truth = e2e.compare_tally(ledger, client_id, judge.bot_runs(api))
            delivered = sum(sum(c.get("events", {}).values())
                            for _, b in truth for c in b.get("connections", []))
            return dj, problems, delivered

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(judge_dj, djs))
        differ = [(dj, p) for dj, p, _ in results if p]
        delivered = sum(d for _, _, d in results)
        handled = events_handled(final)
        code = host.stop()
        host = None
        print(f"bench-host: {len(djs)} bots, {args.rate:g} events/s each for {args.seconds:g} s")
        print(f"  events: {delivered} delivered (ledger), {handled:.0f} handled (host), "
              f"{len(differ)} DJs whose tally differs from the ledger")
        for dj, p in differ[:5]:
            print(f"    {dj}: {p[:2]}")
        print(f"  memory: RSS {rss0 / 2**20:.1f} MiB idle, {rss2 / 2**20:.1f} MiB with every bot "
              f"connected (peak {peak / 2**20:.1f}): {(rss2 - rss0) / len(djs) / 1024:.1f} KiB per bot")
        print(f"  CPU over {w2 - w1:.0f} s of steady load: {rate:.0f} events/s handled, host "
              f"{host_cores * 100:.0f} % of a core = {host_cores * 100 / max(rate / 1000, 1e-9):.1f} % "
              f"of a core per 1 000 events/s (emulator {emu_cores * 100:.0f} %)")
        def ms(le):
            return f"{le * 1000 if le is not None else float('nan'):.0f} ms"
        print(f"  emit-to-handler delay, p99 (histogram bucket): <= {ms(steady_le)} over the "
              f"steady window ({steady_n:.0f} events); <= {ms(le)} over the whole run "
              f"({observed:.0f} events, the connect burst included)")
        buckets = delay_buckets(final)
        print("  delay histogram (le seconds: events): "
              + ", ".join(f"{le:g}: {v:.0f}" for le, v in buckets))
        print(f"  host exit on SIGTERM: {code}")
        return 0 if not differ and code == 0 else 1
    finally:
        if host is not None and host.proc is not None and host.proc.poll() is None:
            os.killpg(host.proc.pid, signal.SIGKILL)
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()


if __name__ == "__main__":
    sys.exit(main())
