#!/usr/bin/env python3
"""scripts/e2e host-replicas: three `onair host` replicas over one PostgreSQL.

1. PostgreSQL (Debian's server binaries) in a temporary folder: `initdb`,
   `pg_ctl start` on 127.0.0.1 at a free port; stopped and removed after.
2. `onair serve --json --scenario faulty --djs 59` (60 DJs) and an app
   whose redirect URI is the replicas' shared public URL (replica 0's).
3. Three replicas, each with its own host.toml and listening port, on the
   same database; replica 2 reaches it through a TCP proxy in this script.
4. Every DJ connects through /connect → consent → /callback (spread over
   the replicas' /connect; the callback lands on the public URL), and 940
   more DJs who never go on air (--idle-djs) besides, a thousand DJs in
   all: the app's probe budget is the host's default, 200 a second
   (--probe-budget), for all replicas (their plan spends 95 % of it; the
   940 at the spec's floor would send 209).
5. Mid-broadcast, replica 1 is killed (SIGKILL) and, a few seconds later,
   replica 2 is cut from the database for 20 s (the proxy holds every
   connection silent, then closes them and lets new ones through).
6. Judged as scripts/e2e host judges one host (scripts/e2e.d/host.py), and:
   every bot of the killed and of the cut replica was taken over by a live
   replica within 30 s (leases polled in the database every 0.25 s), no
   DJ's streams open at once (one replica drives a bot), no
   refresh token was presented twice and no `invalid_grant` (request log),
   nobody consented again, every DJ's tally = ledger, and the bots end
   spread evenly over the live replicas (within one). By the service's
   request log, read every 0.2 s and stamped with real time (the
   emulator's clock is held at times): off-air probes (stream connects
   answered 404) at most the budget on average before the kill and after
   the takeover, and at most 10 % over it in any 10 s; the killed replica's bots connect again in batches, at
   most the budget in any second, every one of them, with no per-second
   429.
7. After the broadcasts, an admin revokes one bot through a replica that
   does not run it (one revoke at the service, the bot stopped for
   consent), and its DJ connects again through the bot's re-connect link
   (the callback on another replica): the same bot runs again.

--quota: the daily-budget run instead, on the `busy` scenario (`faulty`
sets its own daily limits): 6 DJs over three replicas, each
bot listing the listeners every 5 s of service time, the emulator's daily
limit of `listeners.read` set low. Once one bot's listing gets the daily
429 (scope listeners.read), no other bot of the app lists listeners after
the time it takes the store to carry it (1.5 s), while chat and streams go
on.

Exit 0 only when all of it holds. Standard library only.
"""

import argparse
import base64
import collections
import concurrent.futures
import hashlib
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import e2e  # noqa: E402  (scripts/e2e.py: the single-bot judge's checks)
import host as single  # noqa: E402  (scripts/e2e.d/host.py: the host's judge)

TAKEOVER_LIMIT_S = 30.0


def pg_bin():
    """PostgreSQL's server binaries, or None."""
    if os.environ.get("ONAIR_PG_BIN"):
        return os.environ["ONAIR_PG_BIN"]
    found = []
    if os.path.isdir("/usr/lib/postgresql"):
        for v in os.listdir("/usr/lib/postgresql"):
            b = os.path.join("/usr/lib/postgresql", v, "bin")
            if os.path.exists(os.path.join(b, "initdb")) and v.isdigit():
                found.append((int(v), b))
    if found:
        return max(found)[1]
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True)
        b = out.stdout.strip()
        return b if os.path.exists(os.path.join(b, "initdb")) else None
    except (OSError, subprocess.CalledProcessError):
        return None


class Postgres:
    """A throwaway cluster: initdb, pg_ctl start; stop() removes it."""

    def __init__(self, work):
        self.bin = pg_bin()
        if self.bin is None:
            raise FileNotFoundError("PostgreSQL's server binaries (initdb, pg_ctl)")
        # Its own folder: the work folder is root's alone (mkdtemp).
        self.dir = tempfile.mkdtemp(prefix="onair-e2e-pg-")
        self.root = os.geteuid() == 0
        if self.root:
            # initdb refuses root: the cluster is the postgres user's.
            shutil.chown(self.dir, "postgres")
        self.port = single.free_port()
        self.url = f"postgres://onair@127.0.0.1:{self.port}/postgres"
        self.run("initdb", "-D", f"{self.dir}/data", "-A", "trust", "-U", "onair", "--no-sync")
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self.run("pg_ctl", "-D", f"{self.dir}/data", "-o", opts, "-l", f"{self.dir}/log", "-w", "start")

    def run(self, tool, *args):
        cmd = [os.path.join(self.bin, tool), *args]
        if self.root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    def sql(self, query):
        """Rows of `query` (tab-separated fields)."""
        out = subprocess.run(
            [os.path.join(self.bin, "psql") if os.path.exists(os.path.join(self.bin, "psql")) else "psql",
             "-X", "-At", "-F", "\t", "-h", "127.0.0.1", "-p", str(self.port), "-U", "onair",
             "-d", "postgres", "-c", query],
            capture_output=True, text=True, timeout=10,
        )
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip())
        return [line.split("\t") for line in out.stdout.splitlines() if line]

    def stop(self):
        try:
            self.run("pg_ctl", "-D", f"{self.dir}/data", "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


class Proxy:
    """A TCP proxy to Postgres for one replica; cut() makes every
    connection silent (nothing forwarded, new ones accepted and held),
    heal() closes the held ones and forwards again."""

    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.cut_now = False
        self.lock = threading.Lock()
        self.socks = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.socks.append(client)
                if self.cut_now:
                    continue  # held, silent
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.socks.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    def pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                while self.cut_now:
                    time.sleep(0.05)  # silent: nothing goes through
                    if src.fileno() < 0:
                        return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self):
        self.cut_now = True

    def heal(self):
        with self.lock:
            held, self.socks = self.socks, []
        for s in held:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass
        self.cut_now = False

    def close(self):
        self.listener.close()
        self.heal()


class Replica(single.Host):
    """One replica: a host process with its own config and log."""

    def __init__(self, index, *args):
        super().__init__(*args)
        self.index = index
        self.id = None

    def replica_id(self):
        if self.id is None:
            # The last start's (a restarted replica has a new id).
            found = re.findall(r'replica="?([0-9a-f]{16})', open(self.log_path).read())
            self.id = found[-1] if found else None
        return self.id


class Failed(Exception):
    """The run cannot go on."""


class Clock:
    """The emulator's clock."""

    def __init__(self, control):
        self.control = control

    def pause(self):
        e2e.http_json(f"{self.control}/clock/pause", {})

    def resume(self):
        e2e.http_json(f"{self.control}/clock/resume", {})


def write_config(path, base, client_id, port, public_url, watchdog_ms, extra="", probe_budget=200):
    with open(path, "w") as f:
        f.write(f"""{single.app_section(base, client_id)}
[host]
listen = "127.0.0.1:{port}"
public_url = "{public_url}"
start_spread_ms = 1000
probe_budget_per_s = {probe_budget}
# the judge reads every greeting of a broadcast back from the log
events_per_broadcast = 100000

[bot]
watchdog_ms = {watchdog_ms}
{extra}
{single.KIT}""")


def owners(pg):
    """{bot: replica id} for every lease held now."""
    rows = pg.sql("SELECT id, lease_owner FROM integrations WHERE lease_owner IS NOT NULL "
                  "AND lease_expires_ms > CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)")
    return {int(r[0]): r[1] for r in rows}


class Sampler:
    """Reads the emulator's request log every 0.2 s in a thread of its own
    and stamps each request with the real time it was first seen (at most
    0.2 s late): the emulator's own times stand still while its clock is
    held, and takeovers run on real time."""

    def __init__(self, control, client_id):
        self.url = f"{control}/requests?clientId={client_id}"
        self.seen = []  # (monotonic seconds, request)
        self.since = 0
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            try:
                found = e2e.http_json(f"{self.url}&since={self.since}", timeout=5)["requests"]
            except (OSError, ValueError):
                found = []
            at = time.monotonic()
            for r in found:
                self.seen.append((at, r))
                self.since = max(self.since, r["seq"])
            time.sleep(0.2)

    def stop(self):
        self.running = False
        self.thread.join(timeout=5)


def fingerprint(secret):
    """The emulator's fingerprint of a credential (its request log's
    `credential`)."""
    return hashlib.sha256(secret.encode()).hexdigest()[:12]


def busiest(stamps, window):
    """The most of `stamps` (seconds) within any `window` seconds."""
    stamps = sorted(stamps)
    most, j = 0, 0
    for i, t in enumerate(stamps):
        while stamps[j] <= t - window:
            j += 1
        most = max(most, i - j + 1)
    return most


def judge_probes(sampler, integrations, victims, killed_at, before, after, budget):
    """The off-air probing and the batched takeover, by the service's
    request log as sampled in real time: off-air probes (stream connects
    answered 404, every DJ of the app) at most the budget on average
    before the kill and after the takeover, at most 10 % over it in any
    10 s; the killed replica's bots'
    first connects after the kill at most the budget in any second, every
    one of them connected again, none answered a per-second 429."""
    problems = []
    probes = [(at, r) for at, r in sampler.seen
              if r["path"] == "/v1/live/events" and r["status"] == 404]
    rates = []
    for name, (lo, hi) in (("before the kill", before), ("after the takeover", after)):
        stamps = [at for at, _ in probes if lo <= at < hi]
        most = busiest(stamps, 10.0)
        rate = len(stamps) / max(hi - lo, 1e-9)
        rates.append(f"{rate:.1f}/s {name} (busiest 10 s: {most / 10:.1f}/s)")
        if hi - lo < 5:
            problems.append(f"off-air probes {name}: only {hi - lo:.1f} s to judge")
        # The plan spends 95 % of the budget on average; a busy 10 s may
        # pass it by the draws' chance, the window's mean may not.
        if rate > budget or most > budget * 11:
            problems.append(f"off-air probes {name}: {rate:.1f}/s, {most} in the busiest 10 s, "
                            f"over the budget of {budget}/s")
    if len(integrations) != len(set(integrations.values())) or not victims:
        problems.append(f"{len(integrations)} bots' integrations found, {len(victims)} bots killed")
    victim_integrations = {integrations[b] for b in victims if b in integrations}
    if len(victim_integrations) != len(victims):
        problems.append(f"the integrations of {len(victims) - len(victim_integrations)} killed "
                        f"bots not found ({len(integrations)} known)")
    first = {}
    for at, r in sampler.seen:
        who = r.get("integration")
        if at > killed_at and who in victim_integrations and r["path"] == "/v1/live/events":
            first.setdefault(who, at)
    missing = victim_integrations - set(first)
    if missing:
        problems.append(f"{len(missing)} bot(s) of the killed replica never connected again")
    stamps = sorted(first.values())
    most = busiest(stamps, 1.0)
    if most > budget:
        problems.append(f"{most} first connects of taken bots within one second (budget {budget}/s)")
    quota = [r for at, r in sampler.seen if at > killed_at and r.get("quota") == "perSecond"
             and r.get("integration") in victim_integrations]
    if quota:
        problems.append(f"{len(quota)} per-second quota 429(s) to taken bots")
    spread = stamps[-1] - stamps[0] if stamps else 0.0
    line = (f"; off-air probes {', '.join(rates)} for a budget of {budget}/s; the killed replica's "
            f"{len(victim_integrations)} bots connected again over {spread:.1f} s, at most {most} "
            f"in a second, {len(quota)} per-second 429s")
    return problems, line


class Watch:
    """Polls the leases; times how long a replica's bots took to be held
    by another replica after it went away."""

    def __init__(self, pg):
        self.pg = pg
        self.now = {}
        self.pending = {}  # bot -> (gone replica, since)
        self.took = []     # (bot, what, seconds)
        self.what = {}

    def gone(self, replica_id, what):
        at = time.monotonic()
        self.poll()
        for bot, owner in self.now.items():
            if owner == replica_id:
                self.pending[bot] = (replica_id, at)
                self.what[bot] = what
        return sum(1 for v in self.pending.values() if v[0] == replica_id)

    def poll(self):
        try:
            self.now = owners(self.pg)
        except (RuntimeError, subprocess.TimeoutExpired):
            return
        at = time.monotonic()
        for bot, (gone, since) in list(self.pending.items()):
            owner = self.now.get(bot)
            if owner is not None and owner != gone:
                self.took.append((bot, self.what[bot], at - since))
                del self.pending[bot]


def revoke_and_reconnect_elsewhere(pg, live, bot, dj, admin, control, client_id):
    """The admin revokes a bot through a replica that does not run it, and
    the DJ connects again (the bot's re-connect link) through another: one
    revoke at the service, the bot stopped for consent, then the same bot
    back on some replica. Returns (problems, the new consent code)."""
    # A bot started from stored tokens first checks the app's credentials with a
    # revoke of the token "onair-credentials-check" (its fingerprint below): not
    # a revoke of anything.
    check = hashlib.sha256(b"onair-credentials-check").hexdigest()[:12]

    def revokes():
        requests = e2e.http_json(f"{control}/requests?clientId={client_id}")["requests"]
        return sum(1 for r in requests if r.get("grant") == "revoke" and r.get("credential") != check)

    owner = owners(pg).get(bot)
    others = [r for r in live if r.replica_id() != owner]
    if owner is None or not others:
        return [f"bot {bot}: no owner, or no other replica to revoke it through"], None
    via, back_via = others[0], others[-1]
    before = revokes()
    request = urllib.request.Request(
        f"{via.url}/admin/bots/{bot}/revoke", data=b"", method="POST",
        headers={"Authorization": f"Bearer {admin}", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        if r.status != 200:
            return [f"revoke of bot {bot} through a replica not running it: {r.status}"], None
    deadline = time.monotonic() + 20
    while True:
        view = via.api(f"/api/bots/{bot}?events=0")["bot"]
        if "revoked" in json.dumps(view.get("stop")) and view.get("reconnect"):
            break
        if time.monotonic() > deadline:
            return [f"bot {bot} revoked through another replica shows {view.get('state')}, "
                    f"{view.get('stop')}"], None
        time.sleep(0.25)
    problems = []
    if revokes() != before + 1:
        problems.append(f"bot {bot}: {revokes() - before} revokes at the service (one expected)")
    again, code = single.connect(back_via.url, dj, bot=bot)
    if again != bot:
        problems.append(f"{dj}'s re-connect made bot {again}, not bot {bot}")
    deadline = time.monotonic() + 30
    while True:
        view = back_via.api(f"/api/bots/{bot}?events=0")["bot"]
        if view.get("stop") is None and not view.get("reconnect") and bot in owners(pg):
            break
        if time.monotonic() > deadline:
            row = pg.sql(f"SELECT lease_owner, lease_generation, stop_code FROM integrations "
                         f"WHERE id = {int(bot)}")
            problems.append(f"bot {bot} not back after its re-connect: {view.get('state')}, "
                            f"{view.get('stop')} (run by {owner}, revoked through replica "
                            f"{via.index} {via.replica_id()}, connected again through replica "
                            f"{back_via.index} {back_via.replica_id()}; its row: {row})")
            break
        time.sleep(0.25)
    return problems, code


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onair", required=True)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--djs", type=int, default=None)
    parser.add_argument("--scenario", default=None,
                        help="default: faulty; busy for --quota (faulty sets its own daily limits)")
    parser.add_argument("--speed", type=float, default=None,
                        help="emulator speed (default 2; 4 for --quota; ONAIR_E2E_SPEED)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--watchdog-ms", type=int, default=15_000,
                        help="the bots' heartbeat watchdog (host.toml allows no less than 15000)")
    parser.add_argument("--kill-at", type=float, default=0.15,
                        help="SIGKILL replica 1 once this share of the scenario has run")
    parser.add_argument("--cut-after", type=float, default=4.0,
                        help="cut replica 2 from the database this many seconds after the kill")
    parser.add_argument("--cut-for", type=float, default=20.0)
    parser.add_argument("--quota", action="store_true", help="the daily-budget run")
    parser.add_argument("--listeners-limit", type=int, default=12)
    parser.add_argument("--bench", type=int, default=0, metavar="KILLS",
                        help="scripts/bench-host-replicas: kill replica 1 this many times (back "
                             "under a new id after each takeover), time the takeovers, no cut, no judge")
    parser.add_argument("--json-out", default=None, help="(bench) write the takeover times here")
    parser.add_argument("--idle-djs", type=int, default=None,
                        help="DJs who consent and never go on air (default 940; none for "
                             "--quota and --bench)")
    parser.add_argument("--probe-budget", type=int, default=200,
                        help="probe_budget_per_s of the app, all replicas (default 200, the "
                             "host's default)")
    args = parser.parse_args()
    if args.idle_djs is None:
        args.idle_djs = 0 if (args.quota or args.bench) else 940
    djs_n = args.djs or (6 if args.quota else 60)
    args.kills = args.bench or 1
    args.scenario = args.scenario or ("busy" if args.quota else "faulty")
    if args.speed is None:
        args.speed = float(os.environ.get("ONAIR_E2E_SPEED", "4" if args.quota else "2"))
    label = "host-replicas --quota" if args.quota else "host-replicas"

    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="onair-e2e-replicas-")
    try:
        pg = Postgres(work)
    except FileNotFoundError as e:
        print(f"e2e {label}: SKIPPED: {e} not installed (apt-get install postgresql)")
        return 0
    serve = replicas = proxy = None
    try:
        serve = subprocess.Popen(
            [args.onair, "serve", "--json", "--scenario", args.scenario, "--speed", str(args.speed),
             "--djs", str(djs_n - 1)],
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"),
        )
        ready, _, _ = select.select([serve.stdout], [], [], 30)
        if not ready:
            print(f"e2e {label}: onair serve did not say where it is within 30 s")
            return 1
        info = json.loads(serve.stdout.readline())
        control, base = info["controlUrl"], info["baseUrl"]
        ports = [single.free_port() for _ in range(args.replicas)]
        public = f"http://127.0.0.1:{ports[0]}"
        app = e2e.http_json(f"{control}/apps", {"redirectUri": f"{public}/callback"})
        client_id, client_secret = app["clientId"], app["clientSecret"]
        if args.quota:
            e2e.http_json(f"{control}/quota",
                          {"daily": {"perPermission": {"listeners.read": args.listeners_limit}}})
        admin = secrets.token_urlsafe(24)
        key = base64.b64encode(secrets.token_bytes(32)).decode()
        proxy = Proxy(pg.port)
        # (--quota: no greetings, so the listings do not queue behind
        # hundreds of chat sends for the per-second quota)
        extra = ('listeners_every_ms = 5000\n\n[bot.replies]\nwelcome = ""\nwelcome_back = ""\n'
                 if args.quota else "")
        replicas = []
        for i, port in enumerate(ports):
            config = os.path.join(work, f"host{i}.toml")
            write_config(config, base, client_id, port, public, args.watchdog_ms, extra,
                         args.probe_budget)
            db = pg.url if i != 2 else f"postgres://onair@127.0.0.1:{proxy.port}/postgres"
            env = dict(os.environ, ONAIR_HOST_CLIENT_SECRET=client_secret, ONAIR_HOST_KEY=key,
                       ONAIR_HOST_ADMIN_TOKEN=admin, ONAIR_HOST_LOG="info", ONAIR_HOST_DATABASE=db)
            replicas.append(Replica(i, args.onair, config, env, os.path.join(work, f"host{i}.log"),
                                    f"http://127.0.0.1:{port}", admin))
        for r in replicas:
            r.start()

        Clock(control).pause()
        djs = [d["dj"] for d in e2e.http_json(f"{control}/djs")["djs"]]
        bots, codes = {}, []
        for n, dj in enumerate(djs):
            bot, code = single.connect(replicas[n % len(replicas)].url, dj)
            bots[dj] = bot
            codes.append(code)
        if len(set(bots.values())) != len(djs):
            print(f"e2e {label}: {len(djs)} DJs got {len(set(bots.values()))} bots")
            return 1
        # DJs who never go on air: their bots only probe (within the budget).
        idle = [f"idle-{k}" for k in range(1, args.idle_djs + 1)]
        idle_bots = {}

        def connect_idle(k):
            bot, code = single.connect(replicas[k % len(replicas)].url, idle[k])
            return idle[k], bot, code

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            for dj, bot, code in pool.map(connect_idle, range(len(idle))):
                idle_bots[dj] = bot
                codes.append(code)
        all_bots = dict(bots, **idle_bots)
        if len(set(all_bots.values())) != len(all_bots):
            print(f"e2e {label}: {len(all_bots)} DJs got {len(set(all_bots.values()))} bots")
            return 1
        # Each bot's integration at the service: its consent code's exchange.
        by_code = {fingerprint(c): all_bots[dj] for dj, c in zip(djs + idle, codes)}
        integration_of = {}
        for r in e2e.http_json(f"{control}/requests?clientId={client_id}&path=/v1/oauth/token")["requests"]:
            if r.get("grant") == "authorization_code" and r.get("credential") in by_code:
                integration_of[by_code[r["credential"]]] = r.get("integration")
        sampler = Sampler(control, client_id)
        connected_at = time.monotonic() - started

        watch = Watch(pg)
        clock = Clock(control)

        def alive_check():
            for r in replicas:
                if r.proc is not None and r.proc.poll() is not None:
                    raise Failed(f"replica {r.index} exited ({r.proc.returncode}); log: {r.log_path}")
            if time.monotonic() - started > args.timeout:
                raise Failed(f"the scenario did not finish within {args.timeout} s")

        def wait(seconds, until=None):
            """Polls the leases for `seconds` (or until `until()`)."""
            end_at = time.monotonic() + seconds
            while time.monotonic() < end_at:
                alive_check()
                watch.poll()
                if until is not None and until():
                    return True
                time.sleep(0.25)
            return False

        def events_read():
            """Events the live replicas' bots handled so far (/metrics)."""
            total = 0.0
            for r in replicas:
                if r.proc is None:
                    continue
                try:
                    text = single.get(f"{r.url}/metrics", {"Authorization": f"Bearer {admin}"}, timeout=5)
                except OSError:
                    return None
                for line in text.splitlines():
                    if line.startswith("onair_host_events_total"):
                        total += float(line.rsplit(" ", 1)[-1])
            return total

        def settle():
            """With the clock held: until every bot handled what it had
            read and saved it (no event handled and no kit state saved for
            2.5 s; at least 3 s, at most 30 s)."""
            first, last, seen = time.monotonic(), time.monotonic(), None
            # (the bots of DJs never on air save nothing worth waiting for)
            on_air_ids = ",".join(str(int(b)) for b in bots.values())
            while time.monotonic() - first < 30:
                alive_check()
                watch.poll()
                try:
                    now_seen = (pg.sql("SELECT COALESCE(MAX(updated_at_ms), 0) FROM integrations "
                                       f"WHERE id IN ({on_air_ids})"),
                                events_read())
                except (RuntimeError, subprocess.TimeoutExpired):
                    now_seen = None
                if now_seen != seen:
                    seen, last = now_seen, time.monotonic()
                elif time.monotonic() - last >= 2.5 and time.monotonic() - first >= 3:
                    return
                time.sleep(0.25)

        def balanced():
            counts = collections.Counter(watch.now.values())
            spread = [counts.get(r.replica_id(), 0) for r in replicas if r.proc is not None]
            return sum(spread) == len(all_bots) and max(spread) - min(spread) <= 1

        def position():
            progress = e2e.http_json(f"{control}/scenario")
            return progress.get("done"), progress.get("position", 0) / max(progress.get("total", 0), 1)

        # The emulator's time is held whenever bots move between replicas
        # on purpose (the first spread, the kill, the cut, the heal): the
        # service has no stream resumption, so frames written while a bot
        # moves would be lost to its tally and the ledger could not be
        # compared exactly. Leases, renewals and takeovers run on real time.
        killed_at = cut_at = healed_at = settled_at = None
        victims = []
        try:
            if not wait(20, balanced):
                raise Failed("the replicas did not share the bots evenly within 20 s of the start")
            balanced_at = time.monotonic()
            clock.resume()
            if not args.quota:
                for k in range(args.kills):
                    while position()[1] < args.kill_at and not position()[0]:
                        wait(0.5)
                    if position()[0]:
                        raise Failed("the scenario ended before the kill")
                    clock.pause()
                    settle()  # every bot saves what it read (2 s checkpoints)
                    victim = replicas[1]
                    gone = watch.gone(victim.replica_id(), f"SIGKILL#{k + 1}")
                    victims = [b for b, (who, _) in watch.pending.items() if who == victim.replica_id()]
                    os.killpg(victim.proc.pid, signal.SIGKILL)
                    victim.proc.wait()
                    victim.proc = None
                    killed_at = time.monotonic()
                    clock.resume()
                    print(f"  replica 1 killed (SIGKILL) with {gone} bots at {killed_at - started:.1f} s")
                    if args.bench:
                        wait(TAKEOVER_LIMIT_S + 5, lambda: not watch.pending)
                        mine = [t for _, w, t in watch.took if w == f"SIGKILL#{k + 1}"]
                        if mine:
                            print(f"    taken over: median {statistics.median(mine):.1f} s, "
                                  f"last {max(mine):.1f} s")
                    if k + 1 < args.kills:
                        # (bench) takeover, back under a new id, balanced, again.
                        wait(TAKEOVER_LIMIT_S + 5, lambda: not watch.pending)
                        victim.id = None
                        victim.start()
                        wait(30, balanced)
                if args.bench:
                    code = bench_report(watch, args, started)
                    if code == 0:
                        shutil.rmtree(work, ignore_errors=True)
                    return code
                if args.kills == 1:
                    wait(args.cut_after)
                    clock.pause()
                    settle()
                    cut = replicas[2]
                    gone = watch.gone(cut.replica_id(), "cut")
                    proxy.cut()
                    cut_at = time.monotonic()
                    print(f"  replica 2 cut from the database with {gone} bots at {cut_at - started:.1f} s")
                    # Its bots read nothing they could not save: time runs
                    # again once they stopped there.
                    if not wait(15, lambda: "cut from the store" in open(cut.log_path).read()):
                        raise Failed("replica 2 did not stop its bots within 15 s of the cut")
                    clock.resume()
                    print(f"  replica 2 stopped its bots {time.monotonic() - cut_at:.1f} s after the cut")
                    # (the settle below takes 3 s or more)
                    wait(max(0.0, args.cut_for - 3 - (time.monotonic() - cut_at)))
                    clock.pause()
                    settle()  # what was read is saved before bots move back
                    proxy.heal()
                    healed_at = time.monotonic()
                    print(f"  replica 2 back on the database at {healed_at - started:.1f} s")
                    wait(TAKEOVER_LIMIT_S, lambda: not watch.pending)
                    ok = wait(20, balanced)
                    clock.resume()
                    if not ok:
                        counts = collections.Counter(watch.now.values())
                        raise Failed(f"not balanced 20 s after the heal: {dict(counts)}")
                    print(f"  balanced again {time.monotonic() - healed_at:.1f} s after the heal")
                    settled_at = time.monotonic() + 5  # the last moved bots' first connects
            while not position()[0]:
                wait(0.5)
        except Failed as e:
            clock.resume()
            if cut_at is not None and healed_at is None:
                proxy.heal()
            print(f"e2e {label}: {e}")
            print(f"  (logs: {work})")
            return 1
        scenario_end = time.monotonic()
        while watch.pending and time.monotonic() - scenario_end < TAKEOVER_LIMIT_S + 5:
            watch.poll()
            time.sleep(0.25)

        problems = []
        took = [t for _, _, t in watch.took]
        for what in ("SIGKILL", "cut"):
            late = [(b, round(t, 1)) for b, w, t in watch.took
                    if w.split("#")[0] == what and t > TAKEOVER_LIMIT_S]
            if late:
                problems.append(f"{len(late)} bot(s) of the {what} replica taken over after "
                                f"{TAKEOVER_LIMIT_S:.0f} s: {late[:5]}")
        if watch.pending:
            problems.append(f"{len(watch.pending)} bot(s) never taken over: {sorted(watch.pending)[:10]}")

        live = [r for r in replicas if r.proc is not None]
        if not args.quota and not balanced():
            counts = collections.Counter(watch.now.values())
            problems.append(f"not balanced at the end: {dict(counts)}")

        # Every bot reads its last LIVE_ENDED (when it was sent one).
        # The API of a replica that did not connect the DJs: any replica answers for every bot.
        front = live[-1]
        ledgers = {dj: e2e.http_json(f"{control}/ledger?dj={urllib.parse.quote(dj)}&clientId={client_id}")
                   for dj in djs}
        deadline = time.monotonic() + 40
        for dj in djs:
            last_end = None
            for broadcast in ledgers[dj].get("broadcasts", []):
                for entry in broadcast.get("bots", []):
                    if any(c.get("end") == "LIVE_ENDED" for c in entry.get("connections", [])):
                        last_end = broadcast.get("liveId")
            while last_end is not None:
                ended = [b["liveId"] for b in front.api(f"/api/bots/{bots[dj]}?events=0")["broadcasts"]]
                if last_end in ended:
                    break
                if time.monotonic() > deadline:
                    problems.append(f"{dj}'s bot did not read the end of broadcast {last_end}: {ended}")
                    break
                time.sleep(0.25)
        time.sleep(1.0)  # the event log's last batch

        apis = {dj: front.api(f"/api/bots/{bots[dj]}?kind=arrival&events=1000000") for dj in djs}
        as_admin = {"Authorization": f"Bearer {admin}"}  # /metrics and every bot: the admin's
        shown = [single.get(f"{r.url}/", as_admin) for r in live] + [single.get(f"{front.url}/metrics", as_admin)]
        shown += [json.dumps(a) for a in apis.values()]
        # The broadcasts are over: an admin revokes one bot through a replica
        # that does not run it, and its DJ connects again through another.
        moved = None
        if not args.quota and not args.bench and len(live) > 1:
            moved = djs[0]
            found, code = revoke_and_reconnect_elsewhere(
                pg, live, bots[moved], moved, admin, control, client_id)
            problems += found
            codes.append(code)
            shown.append(json.dumps(front.api(f"/api/bots/{bots[moved]}?events=0")))
        stopping_at = time.monotonic()
        for r in live:
            code = r.stop()
            r.proc = None
            if code != 0:
                problems.append(f"replica {r.index} exited with {code} on SIGTERM; log: {r.log_path}")
        elapsed = time.monotonic() - started

        # The log keeps its last 20 000 requests: the sampler read every
        # one as it came (from the first, a page before the consents'
        # requests were 20 000 back); then the rest.
        sampler.stop()
        requests = [r for _, r in sampler.seen]
        requests += e2e.http_json(
            f"{control}/requests?clientId={client_id}&since={sampler.since}")["requests"]
        by_integration = collections.defaultdict(list)
        for r in requests:
            by_integration[r.get("integration")].append(r)
        events = people = 0
        overlaps = []
        for dj in djs:
            ledger = ledgers[dj] = e2e.http_json(
                f"{control}/ledger?dj={urllib.parse.quote(dj)}&clientId={client_id}")
            tally = single.bot_runs(apis[dj])
            found, truth = e2e.compare_tally(ledger, client_id, tally)
            found += [f"broadcast {live_id}: {person} greeted as a first arrival twice"
                      for live_id, person in e2e.greeted_twice(tally["arrivals"])]
            integrations = {b.get("integration") for _, b in truth}
            if len(integrations) > 1:
                found.append(f"{len(integrations)} integrations in the ledger (one consent, one bot)")
            # One replica drives a bot: its streams never overlap (beyond the
            # service noticing a dead connection at its next write: 1 s).
            conns = sorted((c for _, b in truth for c in b.get("connections", [])),
                           key=lambda c: c.get("openedAtMs", 0))
            for prev, nxt in zip(conns, conns[1:]):
                closed = prev.get("closedAtMs")
                if closed is None or nxt.get("openedAtMs", 0) < closed - 1000 * args.speed:
                    overlaps.append((dj, (closed or 0) - nxt.get("openedAtMs", 0)))
            view = apis[dj]["bot"]
            if view.get("stop"):
                found.append(f"the bot stopped: {view['stop']}")
            problems += [f"{dj} (bot {bots[dj]}): {p}" for p in found]
            events += sum(sum(c.get("events", {}).values()) for _, b in truth for c in b.get("connections", []))
            people += sum(len(b["totals"].get("people", {})) for _, b in truth)

        if overlaps:
            problems.append(f"{len(overlaps)} stream(s) of one DJ open at once (two replicas driving "
                            f"one bot?): {overlaps[:5]}")
        token_posts = [r for r in requests if r["path"] == "/v1/oauth/token"]
        exchanges = [r for r in token_posts if r.get("grant") == "authorization_code"]
        consents = len(djs) + len(idle) + (1 if moved else 0)
        if len(exchanges) != consents:
            problems.append(f"{len(exchanges)} code exchanges for {consents} consents")
        refreshes = [r for r in token_posts if r.get("grant") == "refresh_token"]
        twice = [c for c, n in collections.Counter(r.get("credential") for r in refreshes).items() if n > 1]
        if twice:
            problems.append(f"{len(twice)} refresh token(s) presented twice")
        refused = [r for r in requests if r.get("oauthError") == "invalid_grant"]
        if refused:
            problems.append(f"{len(refused)} invalid_grant answers (a DJ would have to consent again)")

        sampler.stop()
        probe_line = ""
        if args.idle_djs and killed_at is not None and settled_at is not None:
            found, probe_line = judge_probes(sampler, integration_of, victims, killed_at,
                                             (balanced_at + 5, killed_at),
                                             (settled_at, stopping_at), args.probe_budget)
            problems += found

        quota_line = ""
        if args.quota:
            found, quota_line = judge_quota(requests, args.speed, len(djs))
            problems += found

        log_text = "".join(open(r.log_path).read() for r in replicas)
        secret_values = {"the client secret": client_secret, "the admin token": admin, "the key": key}
        secret_values.update({f"consent code {i}": c for i, c in enumerate(codes) if c})
        for name, value in secret_values.items():
            if value in log_text:
                problems.append(f"{name} is in a replica's log")
            if any(value in page for page in shown):
                problems.append(f"{name} is on a page or API answer")
        for where, text in [("a replica's log", log_text)] + [("a page", p) for p in shown]:
            match = single.TOKEN_LIKE.search(text)
            if match:
                problems.append(f"something token-like in {where}: {match.group(0)[:6]}…")
                break

        takeover = ""
        if took:
            takeover = (f", takeover median {statistics.median(took):.1f} s, max {max(took):.1f} s "
                        f"({len(took)} bots)")
        never = f" and {len(idle)} never on air" if idle else ""
        summary = (f"{label}: {len(replicas)} replicas, {len(djs)} DJs{never} "
                   f"(connected by {connected_at:.1f} s), "
                   f"{events} events, {people} people, {len(refreshes)} refreshes, {len(requests)} requests"
                   f"{takeover}{probe_line}{quota_line}, {elapsed:.1f} s")
        if problems:
            with open(os.path.join(work, "requests.json"), "w") as f:
                json.dump(requests, f)
            for dj in djs:
                with open(os.path.join(work, f"ledger-{dj}.json"), "w") as f:
                    json.dump(ledgers[dj], f)
                with open(os.path.join(work, f"bot-{dj}.json"), "w") as f:
                    json.dump(apis[dj], f)
            print(f"e2e FAILED — {summary}")
            for p in problems[:30]:
                print(f"  - {p}")
            print(f"  (logs: {work})")
            print("0 passed, 1 failed")
            return 1
        if args.quota:
            print(f"e2e ok — {summary}: once one bot met the daily block of listeners.read, no other "
                  "bot of the app listed listeners; chat and streams went on; every DJ's tally = ledger")
        else:
            print(f"e2e ok — {summary}: every bot taken over within {TAKEOVER_LIMIT_S:.0f} s, "
                  "no refresh token presented twice, no invalid_grant, nobody had to consent "
                  "again, every DJ's tally = ledger; a bot revoked through a replica not running "
                  "it came back (the same bot) with its DJ's new consent")
        print("1 passed, 0 failed")
        shutil.rmtree(work, ignore_errors=True)
        return 0
    finally:
        for r in replicas or []:
            if r.proc is not None and r.proc.poll() is None:
                os.killpg(r.proc.pid, signal.SIGKILL)
        if serve is not None:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(timeout=10)
            except subprocess.TimeoutExpired:
                serve.kill()
        if proxy is not None:
            proxy.close()
        pg.stop()


def bench_report(watch, args, started):
    """Takeover after SIGKILL: per kill, when the last of its bots was held
    by a live replica; median and max over the kills, and over all bots."""
    per_kill = collections.defaultdict(list)
    for _, what, t in watch.took:
        per_kill[what].append(t)
    last = [max(v) for v in per_kill.values()]
    every = [t for v in per_kill.values() for t in v]
    if not last:
        print("bench host-replicas: no takeover measured")
        return 1
    print(f"bench host-replicas: {len(last)} SIGKILLs of one of 3 replicas (60 DJs, ~20 bots each): "
          f"all its bots taken over after median {statistics.median(last):.1f} s, max {max(last):.1f} s; "
          f"per bot median {statistics.median(every):.1f} s, max {max(every):.1f} s; "
          f"{len(watch.pending)} never taken; {time.monotonic() - started:.0f} s")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"perKillLastS": last, "perBotS": every, "pending": len(watch.pending)}, f)
    return 0 if not watch.pending and max(last) <= TAKEOVER_LIMIT_S else 1


def judge_quota(requests, speed, bots, every_ms=5000):
    """The daily-budget run: after the first daily 429 of listeners.read, no
    listing by another bot once the store has carried the block (1.5 s of
    real time), none by the blocked bot at all; chat and streams go on."""
    problems = []
    listings = [r for r in requests if r["path"].startswith("/v1/live/listeners")]
    blocks = [r for r in listings if r["status"] == 429 and r.get("dailyScope") == "listeners.read"]
    if not blocks:
        return [f"no daily block of listeners.read in {len(listings)} listings (limit too high?)"], ""
    first = blocks[0]
    t0, who = first["atMs"], first.get("integration")
    carry_ms = 1500 * speed
    reset_ms = t0 + (first.get("retryAfter") or 86_400) * 1000
    after = [r for r in listings if r["seq"] > first["seq"] and r["atMs"] < reset_ms]
    own = [r for r in after if r.get("integration") == who]
    late = [r for r in after if r.get("integration") != who and r["atMs"] > t0 + carry_ms]
    within = [r for r in after if r.get("integration") != who and r["atMs"] <= t0 + carry_ms]
    if own:
        problems.append(f"the blocked bot listed listeners {len(own)} more time(s) before the reset")
    if late:
        problems.append(f"{len(late)} listing(s) by other bots after the block was shared "
                        f"(first {late[0]['atMs'] - t0} ms after it)")
    chats = [r for r in requests if r["atMs"] > t0 + carry_ms and r["method"] == "POST"
             and "chat" in r["path"]]
    streams = [r for r in requests if r["atMs"] > t0 + carry_ms and r["path"].startswith("/v1/live/events")]
    others = [r for r in requests if r["atMs"] > t0 + carry_ms and r.get("permission") not in (None, "listeners.read")]
    if not chats and not others:
        problems.append("no chat or other call after the block (they must go on)")
    if not streams:
        problems.append("no stream opened after the block")
    # What the other bots would have listed without the shared block (one
    # listing every `every_ms` each while streams were open after it).
    open_after = max((r["atMs"] for r in requests if r["path"] == "/v1/live/events"), default=t0)
    unshared = max(0, (open_after - t0) // every_ms) * (bots - 1)
    line = (f", {len(listings)} listings, the daily block at +{t0 - listings[0]['atMs']} ms "
            f"(about {unshared} listings by the other bots without sharing it), "
            f"{len(within)} listing(s) by other bots while it was carried, {len(late)} after; "
            f"{len(chats)} chats, {len(streams)} stream opens after it")
    return problems, line


if __name__ == "__main__":
    sys.exit(main())
