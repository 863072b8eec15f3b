#!/usr/bin/env python3
"""scripts/e2e host: `onair host` with many DJs through the faulty night.

1. `onair serve --json --scenario faulty --djs 19` (20 DJs: main, dj-1 …
   dj-19) and an app whose redirect URI is the host's /callback.
2. `onair host --config host.toml` (the reference bot's kit and replies),
   its secrets from the environment.
3. Each DJ connects as a browser would, with a plain HTTP client and a
   cookie jar: GET /connect (303 to the consent page, a state cookie),
   the consent page with dj=<name> (302 back with code and state),
   GET /callback (303 to the bot's page, and the DJ's session cookie).
4. In the middle of a broadcast the host is stopped (SIGTERM) and started
   again once, emulator time held meanwhile (so frames written are read).
5. When the scenario is done and every bot has read its last LIVE_ENDED,
   each DJ's bot is judged against the ledger as scripts/e2e.py judges one
   bot: the tally (every broadcast, every person), nobody greeted twice in
   a broadcast, every reply naming only people who did that thing before
   it within its freshness, the frozen stream replaced within the watchdog, requests
   within the spec's rules (one code exchange, one refresh per expiry, …);
   and for the host: no DJ had to consent again (no bot stopped for
   consent, one exchange per DJ, no invalid_grant), no code exchanged twice,
   and no log line, page or API answer shows the client secret, the admin
   token, the encryption key, a consent code or any token.
6. Tenants: each DJ, with the session cookie its consent gave (kept across
   the restart: sessions are in the store), sees only their own bot on
   the dashboard, the JSON view and its page, and gets 404 for another
   DJ's; the admin logs in through /admin/login (its form's CSRF token)
   and sees every bot; an anonymous visitor sees no bot.
Exit 0 only when all of it holds. Standard library only.
"""

import argparse
import base64
import collections
import http.cookiejar
import json
import os
import random
import re
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2e  # noqa: E402  (scripts/e2e.py: the single-bot judge's checks)

KIT = """
[bot.kit]
tally = true
commands = [{ name = "hello" }, { name = "top" }]
greetings = { welcome_back_after_ms = 600000 }
milestones = { hearts_every = 100, donations_every = 1000 }

[bot.replies.commands]
hello = "Hello, {nickname}!"
top = "Top donors: {top}"
"""

TOKEN_LIKE = re.compile(r"\b(?:at|rt|code|cs)_[0-9a-f]{10,}")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def app_section(base, client_id):
    """host.toml's [app] table for an app of the emulator at `base` (its
    consent page at /oauth/authorize)."""
    return f"""[app]
base_url = "{base}"
client_id = "{client_id}"
consent_url = "{base}/oauth/authorize?client_id={{client_id}}&redirect_uri={{redirect_uri}}&state={{state}}&scope={{scope}}"
"""


def free_port():
    """A port free on 127.0.0.1 now and below the kernel's ephemeral range,
    so that no outgoing connection takes it before its server listens (a
    replica started a minute later, while another holds a thousand
    streams)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, headers=None, timeout=10):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.read().decode()


def parse_metrics(text):
    """A Prometheus exposition as {series: value} (series with its labels)."""
    values = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            values[name] = float(value)
        except ValueError:
            pass
    return values


# Each DJ's browser: its cookies (the session its first consent gave), kept
# for its next consent (a re-connect link counts only for the bot's DJ).
JARS = {}


def browser(jar):
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)


def fetch(opener, url, data=None, timeout=10):
    """(status, text) of a GET (or a form POST with `data`), redirects not
    followed."""
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    try:
        with opener.open(urllib.request.Request(url, data=body), timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def admin_browser(host_url, admin):
    """The admin logged in through /admin/login as a browser would (the
    form's CSRF token, the session cookie)."""
    opener = browser(http.cookiejar.CookieJar())
    status, form = fetch(opener, f"{host_url}/admin/login")
    match = re.search(r'name="csrf" value="([^"]+)"', form)
    if status != 200 or not match:
        raise SystemExit(f"e2e host: /admin/login answered {status} without a CSRF field")
    status, _ = fetch(opener, f"{host_url}/admin/login", {"csrf": match.group(1), "token": admin})
    if status != 303:
        raise SystemExit(f"e2e host: the admin login answered {status}")
    return opener


def events_handled(host_url, opener):
    """The host's count of stream events its bots handled (/metrics, as the admin)."""
    _, text = fetch(opener, f"{host_url}/metrics")
    return sum(float(v) for v in re.findall(r"^onair_host_events_total\{[^}]*\} (\S+)$", text, re.M))


def wait_until_handled(host_url, opener, quiet_s=1.5, limit_s=20):
    """With the emulator's clock paused, waits until the host has handled what
    the emulator already wrote: its event count unchanged for `quiet_s`. A fixed
    sleep is not enough on a loaded machine, where bytes still in a socket at
    the stop are lost to the tally though the ledger counts them."""
    last, since, deadline = events_handled(host_url, opener), time.monotonic(), time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = events_handled(host_url, opener)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return


def check_tenants(host_url, bots, admin_opener):
    """Each DJ sees only their own bot; the admin every bot; nobody none."""
    problems = []
    rows = re.compile(r'id="bot-(\d+)"')
    for dj, bot in bots.items():
        opener = browser(JARS[dj])
        status, page = fetch(opener, f"{host_url}/")
        seen = {int(b) for b in rows.findall(page)}
        if status != 200 or seen != {bot}:
            problems.append(f"{dj}'s dashboard ({status}) shows bots {sorted(seen)}, not only {bot}")
        status, text = fetch(opener, f"{host_url}/api/bots")
        ids = sorted(v["id"] for v in json.loads(text)["bots"]) if status == 200 else None
        if ids != [bot]:
            problems.append(f"{dj}'s /api/bots ({status}) lists {ids}, not only {bot}")
        if fetch(opener, f"{host_url}/bots/{bot}")[0] != 200:
            problems.append(f"{dj} cannot open their bot's page")
        other = next((b for d, b in bots.items() if d != dj), None)
        if other is not None:
            status, _ = fetch(opener, f"{host_url}/bots/{other}")
            if status != 404:
                problems.append(f"{dj} opened another DJ's bot page: {status}")
    status, page = fetch(admin_opener, f"{host_url}/")
    seen = {int(b) for b in rows.findall(page)}
    if status != 200 or seen != set(bots.values()):
        problems.append(f"the admin's dashboard ({status}) shows {len(seen)} of {len(bots)} bots")
    status, page = fetch(browser(http.cookiejar.CookieJar()), f"{host_url}/")
    if status != 200 or rows.search(page) or "/bots/" in page:
        problems.append(f"an anonymous visitor's dashboard ({status}) shows a bot")
    return problems


class Host:
    """The host process: started, stopped with SIGTERM, started again."""

    def __init__(self, onair, config, env, log_path, url, admin):
        self.onair, self.config, self.env = onair, config, env
        self.log_path, self.url, self.admin = log_path, url, admin
        self.proc = None

    def start(self):
        log = open(self.log_path, "a")
        log.write("==> host started\n")
        log.flush()
        self.proc = subprocess.Popen(
            [self.onair, "host", "--config", self.config],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"e2e host: the host exited at start ({self.proc.returncode}); "
                                 f"log: {self.log_path}")
            try:
                if get(f"{self.url}/healthz", timeout=2) == "ok":
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit("e2e host: the host did not answer /healthz within 20 s")

    def stop(self):
        """SIGTERM; the exit code (None when it had to be killed)."""
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=45)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return None

    def api(self, path):
        return json.loads(get(f"{self.url}{path}", {"Authorization": f"Bearer {self.admin}"}))


def connect(host_url, dj, bot=None):
    """One DJ through /connect (a bot's re-connect link `/connect?bot=N`
    when `bot` is given), the consent page and /callback, as a browser
    would (cookies kept, redirects read one by one). Returns the bot's id
    and the consent code (to look for in logs and pages). The DJ's browser
    (its cookies) is kept in JARS for their next consent."""
    jar = JARS.setdefault(dj, http.cookiejar.CookieJar())
    opener = browser(jar)

    def location(url):
        try:
            opener.open(url, timeout=30)
        except urllib.error.HTTPError as e:
            if e.code in (302, 303):
                return e.headers["Location"]
            raise SystemExit(f"e2e host: {url.split('?')[0]} answered {e.code} for {dj}")
        raise SystemExit(f"e2e host: {url.split('?')[0]} did not redirect for {dj}")

    consent = location(f"{host_url}/connect" + (f"?bot={bot}" if bot is not None else ""))
    callback = location(consent + "&dj=" + urllib.parse.quote(dj))
    query = urllib.parse.parse_qs(urllib.parse.urlparse(callback).query)
    code = query.get("code", [""])[0]
    page = location(callback)
    if not page.startswith("/bots/"):
        raise SystemExit(f"e2e host: /callback sent {dj} to {page}")
    return int(page.rsplit("/", 1)[1]), code


def bot_runs(api):
    """The bot's output in the single-bot judge's shape: its broadcasts
    (ended ones, then the current one when not ended) and its greetings."""
    broadcasts, seen = [], set()
    for b in api["broadcasts"]:
        tally = dict(b["tally"], liveId=b["liveId"])
        broadcasts.append(tally)
        seen.add(b["liveId"])
    current = api.get("current")
    if current and current.get("liveId") not in seen:
        broadcasts.append(dict(current["tally"], liveId=current["liveId"]))
    arrivals = [
        {"liveId": e["detail"].get("liveId"), "id": e["detail"].get("id"), "kind": e["detail"].get("kind")}
        for e in reversed(api["events"])
    ]
    return {"broadcasts": broadcasts, "arrivals": arrivals}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onair", required=True)
    parser.add_argument("--djs", type=int, default=20)
    parser.add_argument("--scenario", default="faulty")
    parser.add_argument("--speed", type=float, default=float(os.environ.get("ONAIR_E2E_SPEED", "4")))
    parser.add_argument("--timeout", type=float, default=240)
    parser.add_argument("--watchdog-ms", type=int, default=15_000,
                        help="the bots' heartbeat watchdog (host.toml allows no less than 15000)")
    parser.add_argument("--restart-at", type=float, default=0.45,
                        help="restart the host once this share of the scenario has run "
                             "(above 1: never, to tell a restart's effects from others')")
    args = parser.parse_args()

    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="onair-e2e-host-")
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", "--scenario", args.scenario, "--speed", str(args.speed),
         "--djs", str(args.djs - 1)],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"),
    )
    host = None
    try:
        ready, _, _ = select.select([serve.stdout], [], [], 30)
        if not ready:
            print("e2e host: onair serve did not say where it is within 30 s")
            return 1
        info = json.loads(serve.stdout.readline())
        control, base = info["controlUrl"], info["baseUrl"]
        port = free_port()
        host_url = f"http://127.0.0.1:{port}"
        app = e2e.http_json(f"{control}/apps", {"redirectUri": f"{host_url}/callback"})
        client_id, client_secret = app["clientId"], app["clientSecret"]
        config = os.path.join(work, "host.toml")
        with open(config, "w") as f:
            f.write(f"""{app_section(base, client_id)}
[host]
listen = "127.0.0.1:{port}"
start_spread_ms = 2000
seed = 7
# the judge reads every greeting of a broadcast back from the log
events_per_broadcast = 100000

[bot]
watchdog_ms = {args.watchdog_ms}
{KIT}""")
        admin = secrets.token_urlsafe(24)
        key = base64.b64encode(secrets.token_bytes(32)).decode()
        env = dict(os.environ, ONAIR_HOST_CLIENT_SECRET=client_secret, ONAIR_HOST_KEY=key,
                   ONAIR_HOST_ADMIN_TOKEN=admin, ONAIR_HOST_LOG="info")
        log_path = os.path.join(work, "host.log")
        host = Host(args.onair, config, env, log_path, host_url, admin)
        host.start()

        djs = [d["dj"] for d in e2e.http_json(f"{control}/djs")["djs"]]
        bots, codes = {}, []
        for dj in djs:
            bot, code = connect(host_url, dj)
            bots[dj] = bot
            codes.append(code)
        if len(set(bots.values())) != len(djs):
            print(f"e2e host: {len(djs)} DJs got {len(set(bots.values()))} bots: {bots}")
            return 1

        restarted = False
        samples = []  # (real s, emulator ms): the scenario's clock jumps, for the replies
        while True:
            progress = e2e.http_json(f"{control}/scenario")
            samples.append((time.monotonic(), e2e.http_json(f"{control}/clock")["nowMs"]))
            if progress.get("done"):
                break
            if host.proc.poll() is not None:
                print(f"e2e host: the host exited ({host.proc.returncode}); log: {log_path}")
                return 1
            if time.monotonic() - started > args.timeout:
                print(f"e2e host: the scenario did not finish within {args.timeout} s: {progress}")
                return 1
            total = max(progress.get("total", 0), 1)
            if not restarted and progress.get("position", 0) >= args.restart_at * total:
                states = e2e.http_json(f"{control}/djs")["djs"]
                if sum(1 for s in states if s.get("onAir") and s.get("openStreams", 0) > 0) >= len(djs) // 2:
                    e2e.http_json(f"{control}/clock/pause", {})
                    wait_until_handled(host_url, admin_browser(host_url, admin))
                    code = host.stop()
                    if code != 0:
                        print(f"e2e host: the host exited with {code} on SIGTERM; log: {log_path}")
                        return 1
                    host.start()
                    e2e.http_json(f"{control}/clock/resume", {})
                    restarted = True
            time.sleep(0.2)
        if not restarted and args.restart_at <= 1:
            print("e2e host: the scenario ended before the restart point")
            return 1

        # Every bot reads its last LIVE_ENDED (when it was sent one).
        ledgers = {dj: e2e.http_json(f"{control}/ledger?dj={urllib.parse.quote(dj)}&clientId={client_id}")
                   for dj in djs}
        deadline = time.monotonic() + 30
        for dj in djs:
            last_end = None
            for broadcast in ledgers[dj].get("broadcasts", []):
                for entry in broadcast.get("bots", []):
                    if any(c.get("end") == "LIVE_ENDED" for c in entry.get("connections", [])):
                        last_end = broadcast.get("liveId")
            while last_end is not None:
                ended = [b["liveId"] for b in host.api(f"/api/bots/{bots[dj]}?events=0")["broadcasts"]]
                if last_end in ended:
                    break
                if time.monotonic() > deadline:
                    print(f"e2e host: {dj}'s bot did not read the end of broadcast {last_end}: {ended}")
                    return 1
                time.sleep(0.2)

        # What the host says, then its pages (for the secrets check): as
        # the admin and as each DJ.
        admin_opener = admin_browser(host_url, admin)
        tenant_problems = check_tenants(host_url, bots, admin_opener)
        apis = {dj: host.api(f"/api/bots/{bots[dj]}?kind=arrival&events=1000000") for dj in djs}
        shown = [fetch(admin_opener, f"{host_url}/")[1], fetch(admin_opener, f"{host_url}/metrics")[1],
                 json.dumps(host.api("/api/bots"))]
        shown += [fetch(admin_opener, f"{host_url}/bots/{bot}")[1] for bot in bots.values()]
        shown += [fetch(browser(JARS[dj]), f"{host_url}/bots/{bot}")[1] for dj, bot in bots.items()]
        shown += [json.dumps(a) for a in apis.values()]
        code = host.stop()
        host = None
        if code != 0:
            print(f"e2e host: the host exited with {code} on SIGTERM; log: {log_path}")
            return 1
        elapsed = time.monotonic() - started

        requests = e2e.http_json(f"{control}/requests?clientId={client_id}")["requests"]
        by_integration = collections.defaultdict(list)
        for r in requests:
            by_integration[r.get("integration")].append(r)
        problems = list(tenant_problems)
        events = people = greeted = replied = 0
        chat = e2e.http_json(f"{control}/chat")["messages"]
        jumps = e2e.clock_jumps(samples, args.speed)
        for dj in djs:
            ledger = ledgers[dj] = e2e.http_json(
                f"{control}/ledger?dj={urllib.parse.quote(dj)}&clientId={client_id}")
            tally = bot_runs(apis[dj])
            found, truth = e2e.compare_tally(ledger, client_id, tally)
            found += [f"broadcast {live}: {person} greeted as a first arrival twice"
                      for live, person in e2e.greeted_twice(tally["arrivals"])]
            found += e2e.check_frozen(truth, args.speed, args.watchdog_ms)
            # The replies: the reference kit's texts, each naming only people
            # who did that thing before it, within its freshness.
            frames = e2e.http_json(
                f"{control}/frames?dj={urllib.parse.quote(dj)}&clientId={client_id}")["frames"]
            said, replies = e2e.check_replies(
                [c for c in chat if c.get("dj") == dj], frames, ledger, client_id, args.speed,
                jumps=jumps, slack_ms=args.watchdog_ms + 5_000)
            found += said
            replied += len(replies)
            integrations = {b.get("integration") for _, b in truth}
            if len(integrations) != 1:
                found.append(f"{len(integrations)} integrations in the ledger (one consent, one bot)")
            for integration in integrations:
                mine = by_integration.get(integration, [])
                checked = e2e.check_requests(mine, truth, args.speed)
                found += [p for p in checked if "token expiry" not in p]
                found += e2e.check_refreshes(mine, truth)
            view = apis[dj]["bot"]
            if view.get("stop"):
                found.append(f"the bot stopped: {view['stop']}")
            problems += [f"{dj} (bot {bots[dj]}): {p}" for p in found]
            events += sum(sum(c.get("events", {}).values()) for _, b in truth for c in b.get("connections", []))
            people += sum(len(b["totals"].get("people", {})) for _, b in truth)
            greeted += sum(1 for a in tally["arrivals"] if a.get("kind") == "first")

        exchanges = [r for r in requests if r.get("grant") == "authorization_code"]
        if len(exchanges) != len(djs):
            problems.append(f"{len(exchanges)} code exchanges for {len(djs)} DJs (one consent each)")
        reused = [c for c, n in collections.Counter(r.get("credential") for r in exchanges).items() if n > 1]
        if reused:
            problems.append(f"a code exchanged twice: {reused}")
        refused = [r for r in requests if r.get("oauthError") == "invalid_grant"]
        if refused:
            problems.append(f"{len(refused)} invalid_grant answers (a DJ would have to consent again)")

        log_text = open(log_path).read()
        secret_values = {"the client secret": client_secret, "the admin token": admin, "the key": key}
        secret_values.update({f"consent code {i}": c for i, c in enumerate(codes) if c})
        for name, value in secret_values.items():
            if value in log_text:
                problems.append(f"{name} is in the host's log")
            if any(value in page for page in shown):
                problems.append(f"{name} is on a page or API answer")
        for where, text in [("the host's log", log_text)] + [("a page", p) for p in shown]:
            match = TOKEN_LIKE.search(text)
            if match:
                problems.append(f"something token-like in {where}: {match.group(0)[:6]}…")
                break

        summary = (
            f"host: {len(djs)} DJs through /connect → consent → /callback, {events} events delivered, "
            f"{people} people, {greeted} greeted, {replied} replies judged, restarted once, {len(requests)} requests, {elapsed:.1f} s; "
            f"each DJ (by session) saw only their bot, the admin (by login) every bot"
        )
        if problems:
            for dj in djs:
                with open(os.path.join(work, f"ledger-{dj}.json"), "w") as f:
                    json.dump(ledgers[dj], f)
                with open(os.path.join(work, f"bot-{dj}.json"), "w") as f:
                    json.dump(apis[dj], f)
            with open(os.path.join(work, "requests.json"), "w") as f:
                json.dump(requests, f)
            print(f"e2e FAILED — {summary}")
            for p in problems[:30]:
                print(f"  - {p}")
            print(f"  (logs: {work})")
            print("0 passed, 1 failed")
            return 1
        print(f"e2e ok — {summary}: every DJ's tally = ledger across the restart, nobody greeted twice, "
              "every reply naming only people who did that thing before it, within its freshness, "
              "no consent asked again, one exchange per code, no secret shown")
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
