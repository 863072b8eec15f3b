#!/usr/bin/env python3
"""The fleet run (scripts/bench-fleet): many DJs, most of them off air, on
several `onair host` replicas over one PostgreSQL, against the emulator's
fleet (`onair serve --djs N --scenario fleet`) at real speed.

Two phases, each with its own emulator, database and replicas. In each,
every DJ consents through /connect → consent → /callback (16 at a time: the
host keeps 20 unfinished consents per address) while replica 0 runs alone,
then the other replicas start and take their share (paced by the budget).

1. Off air (skipped with --no-off-air and --small): `onair serve --djs N`
   with no scenario (nobody on air). Once every bot has probed and waits,
   a replica's RSS minus its RSS at its start, over the bots it runs, is
   the RSS per off-air bot: on the replicas that took their bots over
   (replica 0's, where every DJ consented, keeps what the allocator did not
   return of the bots it gave away; it is shown apart). The service's
   off-air probes (404s of GET /v1/live/events in its request log) are
   counted over a window, once they are steady (a taken bot's next probe
   comes a full draw after its first): probes per second for the whole
   app vs the budget.
2. The fleet: `--on-air` % of the DJs on air at a time, `--rate` events a
   second each. The emulator's clock is held while the DJs consent, while
   each DJ's usual starts of the last `--history-days` days are written to
   the store (what a host that had watched the fleet would know; replica 0
   restarted to read them) and while the replicas share the bots (frames written while a bot moves would be lost
   to its tally), then runs for `--seconds`: events per second reached, the
   probes per second, and on the replicas that took their bots, RSS minus
   the RSS at start minus the off-air bots at phase 1's figure, over the
   live bots: the RSS per live bot. Then the clock is held, every bot saves
   what it read, replica 1 is SIGKILLed and the clock runs again (as
   scripts/e2e.d/host_replicas.py does): the time until the live replicas
   run every bot again (their /metrics), the 429s of the per-second quota
   answered meanwhile (the request log). After `--seconds` / 2 more, the
   clock is held again and every DJ with a broadcast is judged: its tally
   = its ledger (0 DJs differing is 0 events lost). Time to detect: for
   each broadcast that started while the run went on, from its
   `startedAtMs` (GET /_emulator/fleet) to the first stream its bot opened
   on it (the ledger), both emulator time (held clocks do not count).

Prints the figures, or one JSON object with --json. Exit 0 when no DJ's
tally differs, every bot ran again within 60 s, no per-second 429 came
during the takeover and the probes stayed within the budget (+10 %).
Standard library only.
"""

import argparse
import base64
import collections
import concurrent.futures
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "e2e.d"))
import e2e  # noqa: E402
import host as single  # noqa: E402
import host_replicas  # noqa: E402  (Postgres, Replica)

PAGE = os.sysconf("SC_PAGE_SIZE")
TAKEOVER_LIMIT_S = 60.0
# A bot running (its lease held by a live replica and started).
RUNNING = ("connected", "connecting", "waiting", "backing_off", "refreshing")


def rss(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def metrics(replica, admin):
    text = single.get(f"{replica.url}/metrics", {"Authorization": f"Bearer {admin}"}, timeout=20)
    return single.parse_metrics(text)


def states(replica, admin):
    """{state: bots} on one replica."""
    m = metrics(replica, admin)
    out = {}
    for k, v in m.items():
        if k.startswith("onair_host_bots{state="):
            out[k.split('"')[1]] = int(v)
    return out


def log(args, text):
    if not args.json:
        print(text, flush=True)


class Requests:
    """Follows the emulator's request log (GET /requests?since=) in a
    thread, keeping (atMs, path, status, quota) of each request; the log
    keeps its last 20 000, so it is read every half second (`lost` counts
    records gone before they were read)."""

    def __init__(self, control, client_id):
        self.control, self.client_id = control, client_id
        self.seen = []
        self.since = 0
        self.lost = 0
        self.stop_now = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_now:
            try:
                page = e2e.http_json(f"{self.control}/requests?since={self.since}"
                                     f"&clientId={self.client_id}")
            except OSError:
                time.sleep(0.5)
                continue
            if page.get("total", 0) - self.since > 20_000:
                self.lost += 1  # the log moved past what was not read yet
            for r in page["requests"]:
                self.since = max(self.since, r["seq"])
                self.seen.append((r["atMs"], r["path"], r["status"], r.get("quota")))
            time.sleep(0.5)

    def probes(self, t0, t1):
        """404s of the stream (off-air probes) with t0 <= atMs < t1."""
        return [a for a, p, s, _ in self.seen if p == "/v1/live/events" and s == 404 and t0 <= a < t1]

    def close(self):
        self.stop_now = True
        self.thread.join(timeout=5)


def clock_now(control):
    return e2e.http_json(f"{control}/clock")["nowMs"]


def per_second(times, t0, t1):
    """(mean, max) per second of emulator time over [t0, t1)."""
    seconds = max((t1 - t0) / 1000, 1e-9)
    buckets = collections.Counter(int((a - t0) // 1000) for a in times)
    return len(times) / seconds, max(buckets.values(), default=0)


class Phase:
    """One emulator, one database, R replicas, N consented DJs."""

    def __init__(self, args, pg, work, name, serve_args):
        self.args, self.pg, self.work, self.name = args, pg, work, name
        self.serve = None
        self.replicas = []
        self.requests = None
        os.makedirs(os.path.join(work, name), exist_ok=True)
        pg.sql(f"CREATE DATABASE {name}")
        self.db = f"postgres://onair@127.0.0.1:{pg.port}/{name}"
        self.serve = subprocess.Popen(
            [args.onair, "serve", "--json", "--speed", "1", "--djs", str(args.djs), *serve_args],
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, name, "serve.log"), "w"),
        )
        ready, _, _ = select.select([self.serve.stdout], [], [], 120)
        if not ready:
            raise SystemExit(f"bench-fleet: onair serve did not start ({name})")
        info = json.loads(self.serve.stdout.readline())
        self.control, base = info["controlUrl"], info["baseUrl"]
        ports = [single.free_port() for _ in range(args.replicas)]
        public = f"http://127.0.0.1:{ports[0]}"
        app = e2e.http_json(f"{self.control}/apps", {"redirectUri": f"{public}/callback"})
        self.client_id = app["clientId"]
        # The greetings of a night of 10 000 DJs pass the default daily limit.
        e2e.http_json(f"{self.control}/quota", {"daily": {"limit": 1_000_000_000}})
        self.admin = base64.b64encode(os.urandom(18)).decode()
        key = base64.b64encode(os.urandom(32)).decode()
        for i, port in enumerate(ports):
            config = os.path.join(work, name, f"host{i}.toml")
            with open(config, "w") as f:
                f.write(f"""{single.app_section(base, self.client_id)}
[host]
listen = "127.0.0.1:{port}"
public_url = "{public}"
probe_budget_per_s = {args.budget}

{single.KIT}""")
            env = dict(os.environ, ONAIR_HOST_CLIENT_SECRET=app["clientSecret"], ONAIR_HOST_KEY=key,
                       ONAIR_HOST_ADMIN_TOKEN=self.admin, ONAIR_HOST_LOG="warn",
                       ONAIR_HOST_DATABASE=self.db)
            self.replicas.append(host_replicas.Replica(
                i, args.onair, config, env, os.path.join(work, name, f"host{i}.log"),
                f"http://127.0.0.1:{port}", self.admin))
        # Replica 0 alone while the DJs consent (every callback lands on
        # it); the others start once every pair is stored and take their
        # share, so that their RSS counts only the bots they run (replica
        # 0's keeps what the bots it gave away used, and is shown apart).
        self.rss0 = {}
        self.start(self.replicas[:1])
        self.requests = Requests(self.control, self.client_id)

    def start(self, replicas):
        for r in replicas:
            r.start()
        time.sleep(1)
        self.rss0.update({r.index: rss(r.proc.pid) for r in replicas})

    def live(self):
        return [r for r in self.replicas if r.proc is not None]

    def start_the_others(self):
        """The other replicas, once every DJ consented: until they run
        their share (within one per cent), paced by the budget."""
        self.start(self.replicas[1:])
        t0 = time.monotonic()

        def balanced(s):
            spread = [sum(v.get(k, 0) for k in RUNNING) for v in s.values()]
            return (sum(spread) >= self.args.djs
                    and max(spread) - min(spread) <= max(1, self.args.djs // 100))

        now = self.wait_states("the bots shared evenly", balanced, 900)
        log(self.args, f"  {len(self.replicas) - 1} more replicas took their share in "
                       f"{time.monotonic() - t0:.1f} s: "
                       + ", ".join(f"{sum(v.get(k, 0) for k in RUNNING)}" for v in now.values()))
        return now

    def consent_all(self):
        """Every DJ through /connect → consent → /callback, in parallel."""
        djs = [d["dj"] for d in e2e.http_json(f"{self.control}/djs")["djs"] if d["dj"] != "main"]
        t0 = time.monotonic()
        urls = [r.url for r in self.live()]

        def one(n_dj):
            n, dj = n_dj
            return dj, single.connect(urls[n % len(urls)], dj)[0]

        with concurrent.futures.ThreadPoolExecutor(self.args.threads) as pool:
            self.bots = dict(pool.map(one, enumerate(djs)))
        took = time.monotonic() - t0
        log(self.args, f"  {len(djs)} DJs consented in {took:.1f} s ({len(djs) / took:.0f}/s, "
                       f"{self.args.threads} at a time)")
        return djs, took

    def states(self):
        out = {}
        for r in self.live():
            out[r.index] = states(r, self.admin)
        return out

    def wait_states(self, what, until, limit):
        deadline = time.monotonic() + limit
        while True:
            for r in self.live():
                if r.proc.poll() is not None:
                    raise SystemExit(f"bench-fleet: replica {r.index} exited; log: {r.log_path}")
            now = self.states()
            if until(now):
                return now
            if time.monotonic() > deadline:
                raise SystemExit(f"bench-fleet: {what} not within {limit:.0f} s: {now}")
            time.sleep(1)

    def memory(self, now):
        """Per replica: (RSS delta bytes, live bots, off-air bots)."""
        out = {}
        for r in self.live():
            s = now[r.index]
            live = s.get("connected", 0)
            off = sum(s.get(k, 0) for k in RUNNING) - live
            out[r.index] = (rss(r.proc.pid) - self.rss0[r.index], live, off)
        return out

    def close(self):
        if self.requests is not None:
            self.requests.close()
        for r in self.replicas:
            if r.proc is not None and r.proc.poll() is None:
                os.killpg(r.proc.pid, signal.SIGKILL)
                r.proc.wait()
        if self.serve is not None:
            self.serve.send_signal(signal.SIGTERM)
            try:
                self.serve.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.serve.kill()


def running_total(now):
    return sum(sum(s.get(k, 0) for k in RUNNING) for s in now.values())


def off_air_phase(args, pg, work, out):
    log(args, f"bench-fleet: off air: {args.djs} DJs, nobody on air, {args.replicas} replicas")
    phase = Phase(args, pg, work, "offair", [])
    try:
        phase.consent_all()
        phase.wait_states("every bot waiting", lambda s: s[0].get("waiting", 0) >= args.djs, 300)
        phase.start_the_others()
        phase.wait_states("every bot waiting", lambda s: sum(v.get("waiting", 0) for v in s.values())
                          >= args.djs, 300)
        # A taken bot probes once, then waits a full draw ([w, 2w], 1.5 w
        # = DJs / (0.95 budget) on average): the probes are steady after
        # the longest draw, 2w.
        steady = min(2 * args.djs / (1.5 * 0.95 * args.budget), 180)
        log(args, f"  every bot waiting; {steady:.0f} s until the probes are steady")
        time.sleep(steady)
        time.sleep(args.window)
        now = phase.wait_states("every bot running", lambda s: running_total(s) >= args.djs, 30)
        mem = phase.memory(now)
        # Replica 0 ran every bot while the DJs consented and gave most
        # away: its RSS keeps what the allocator does not return. The
        # others' bots were all taken over: their RSS is what a bot costs.
        per_bot = [d / max(o + lv, 1) for i, (d, lv, o) in mem.items() if i != 0]
        first = mem[0][0] / max(mem[0][1] + mem[0][2], 1)
        t1 = clock_now(phase.control)
        t0 = t1 - args.window * 1000
        time.sleep(1.5)  # the log's last page read
        mean, peak = per_second(phase.requests.probes(t0, t1), t0, t1)
        out["offAir"] = {
            "replicas": {str(i): {"rssDeltaBytes": d, "bots": o + lv} for i, (d, lv, o) in mem.items()},
            "rssPerBotBytes": statistics.mean(per_bot), "rssPerBotReplica0Bytes": first,
            "probesPerS": mean, "probesMaxInASecond": peak, "windowS": args.window,
        }
        log(args, f"  RSS per off-air bot: {statistics.mean(per_bot) / 1024:.1f} KiB on the replicas "
                  f"that took theirs ({', '.join(f'{p / 1024:.1f}' for p in per_bot)} KiB); "
                  f"{first / 1024:.1f} KiB on replica 0, where every DJ consented (what it gave "
                  "away stays in its RSS)")
        log(args, f"  off-air probes: {mean:.1f}/s over {args.window:.0f} s (max {peak} in a second), "
                  f"budget {args.budget}/s")
        return statistics.mean(per_bot), mean
    finally:
        phase.close()


def fleet_phase(args, pg, work, out, off_bot_bytes):
    log(args, f"bench-fleet: the fleet: {args.djs} DJs, {args.on_air} % on air at {args.rate:g} events/s, "
              f"{args.replicas} replicas, budget {args.budget}/s")
    phase = Phase(args, pg, work, "fleet", [
        "--scenario", "fleet", "--on-air", str(args.on_air),
        "--events-per-minute", f"{args.rate * 60:g}"])
    clock = host_replicas.Clock(phase.control)
    ok = True
    try:
        clock.pause()
        djs, consent_s = phase.consent_all()
        out["consentS"] = consent_s
        phase.wait_states("every bot running", lambda s: running_total(s) >= args.djs, 300)
        if args.history_days:
            seed_history(args, phase)
        phase.start_the_others()
        time.sleep(3)
        clock.resume()
        resumed_ms = clock_now(phase.control)
        run_t0 = time.monotonic()

        # The steady window: events handled, probes, memory.
        time.sleep(min(10, args.seconds / 4))
        m1 = {r.index: metrics(r, phase.admin) for r in phase.live()}
        t1, w1 = clock_now(phase.control), time.monotonic()
        time.sleep(args.seconds - (time.monotonic() - run_t0))
        now = phase.states()
        m2 = {r.index: metrics(r, phase.admin) for r in phase.live()}
        t2, w2 = clock_now(phase.control), time.monotonic()
        mem = phase.memory(now)
        fleet = e2e.http_json(f"{phase.control}/fleet?onAir=true")

        def handled(m):
            return sum(v for k, v in m.items()
                       if k.startswith("onair_host_events_total") and 'kind="end"' not in k)

        events_rate = sum(handled(m2[i]) - handled(m1[i]) for i in m2) / (w2 - w1)
        time.sleep(1.5)
        probes, probe_peak = per_second(phase.requests.probes(t1, t2), t1, t2)
        live_total = sum(lv for _, lv, _ in mem.values())
        per_live = []
        for i, (d, lv, o) in mem.items():
            if lv and i != 0 and not args.no_off_air:  # (replica 0: as off air)
                per_live.append((d - o * off_bot_bytes) / lv)
        out["fleet"] = {
            "onAirAtEnd": fleet["onAir"], "liveBots": live_total,
            "eventsPerS": events_rate, "eventsPerSAsked": fleet["onAir"] * args.rate,
            "probesPerS": probes, "probesMaxInASecond": probe_peak, "windowS": (t2 - t1) / 1000,
            "replicas": {str(i): {"rssDeltaBytes": d, "live": lv, "offAir": o}
                         for i, (d, lv, o) in mem.items()},
            "rssPerLiveBotBytes": statistics.mean(per_live) if per_live else None,
        }
        log(args, f"  events: {events_rate:.0f}/s handled over {w2 - w1:.0f} s "
                  f"({fleet['onAir']} DJs on air x {args.rate:g}/s = {fleet['onAir'] * args.rate:.0f}/s asked)")
        log(args, f"  off-air probes: {probes:.1f}/s (max {probe_peak} in a second), budget {args.budget}/s")
        if per_live:
            log(args, f"  RSS per live bot: {statistics.mean(per_live) / 1024:.1f} KiB "
                      f"(replicas 1 and on, after {off_bot_bytes / 1024:.1f} KiB per off-air bot: "
                      f"{', '.join(f'{p / 1024:.1f}' for p in per_live)} KiB; {live_total} live)")
        for i, (d, lv, o) in mem.items():
            log(args, f"    replica {i}: RSS +{d / 2**20:.1f} MiB, {lv} live, {o} off air")
        if probes > args.budget * 1.1:
            ok = False

        # The kill: clock held while every bot saves what it read.
        clock.pause()
        settle(phase)
        victim = phase.replicas[1]
        gone = sum(states(victim, phase.admin).get(k, 0) for k in RUNNING)
        kill_ms = clock_now(phase.control)
        os.killpg(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait()
        victim.proc = None
        killed = time.monotonic()
        clock.resume()
        back = None
        while time.monotonic() - killed < TAKEOVER_LIMIT_S + 30:
            try:
                if running_total(phase.states()) >= args.djs:
                    back = time.monotonic() - killed
                    break
            except OSError:
                pass
            time.sleep(0.5)
        settle_ms = clock_now(phase.control)
        time.sleep(2)
        quota = [(a, p) for a, p, s, q in phase.requests.seen
                 if s == 429 and q == "perSecond" and kill_ms <= a <= settle_ms]
        out["takeover"] = {"bots": gone, "allRunningAfterS": back, "perSecond429": len(quota)}
        log(args, f"  replica 1 SIGKILLed with {gone} bots: every bot running again after "
                  + (f"{back:.1f} s" if back is not None else f"more than {TAKEOVER_LIMIT_S + 30:.0f} s")
                  + f"; {len(quota)} per-second 429s meanwhile")
        if back is None or back > TAKEOVER_LIMIT_S or quota:
            ok = False

        time.sleep(max(5.0, args.seconds / 2))
        clock.pause()
        settle(phase)
        end_ms = clock_now(phase.control)
        ok = judge(args, phase, djs, resumed_ms, end_ms, out) and ok
        out["requestLogPagesLost"] = phase.requests.lost
        return ok
    finally:
        phase.close()


def seed_history(args, phase):
    """What a host that had watched the fleet for `--history-days` days
    would know (each DJ on air from its usual start for a mean session,
    every day), written to the store's probe_history; then replica 0 (the
    only one so far) is restarted so that it reads it now (a replica reads
    the histories at its start, and again every minute). The emulator's clock is held, so no
    event is lost; the host's clock is the wall clock, the emulator's is
    behind it by the time held."""
    DAY = 86_400_000
    fleet = e2e.http_json(f"{phase.control}/fleet")
    emu_now = clock_now(phase.control)
    wall_now = int(time.time() * 1000)
    offset = wall_now - emu_now
    session = DAY * args.on_air // 100
    today = emu_now // DAY * DAY
    rows = []
    for plan in fleet["plans"]:
        bot = phase.bots.get(plan["dj"])
        if bot is None:
            continue
        starts = [today - d * DAY + plan["usualStartMs"] + offset
                  for d in range(args.history_days, 0, -1)]
        ended = max((s + session for s in starts if s + session < wall_now), default=0)
        rows.append(f"({bot}, {ended}, '{','.join(str(s) for s in starts[-8:])}')")
    path = os.path.join(phase.work, phase.name, "history.sql")
    with open(path, "w") as f:
        f.write("INSERT INTO probe_history (integration_id, last_ended_ms, starts) VALUES\n"
                + ",\n".join(rows) + "\nON CONFLICT (integration_id) DO UPDATE SET "
                "last_ended_ms = excluded.last_ended_ms, starts = excluded.starts;\n")
    Db(phase.pg, phase.name).sql_file(path)
    t0 = time.monotonic()
    phase.replicas[0].stop()
    phase.start(phase.replicas[:1])
    phase.wait_states("every bot running again", lambda s: running_total(s) >= args.djs, 300)
    log(args, f"  {len(rows)} DJs given {args.history_days} days of history; replica 0 restarted "
              f"to read it ({time.monotonic() - t0:.1f} s)")


class Db:
    """host_replicas' Postgres.sql on one database of the cluster."""

    def __init__(self, pg, name):
        self.pg, self.name = pg, name

    def sql(self, query):
        return self.run(["-c", query])

    def sql_file(self, path):
        return self.run(["-v", "ON_ERROR_STOP=1", "-f", path])

    def run(self, what):
        out = subprocess.run(
            [os.path.join(self.pg.bin, "psql") if os.path.exists(os.path.join(self.pg.bin, "psql"))
             else "psql", "-X", "-At", "-F", "\t", "-h", "127.0.0.1", "-p", str(self.pg.port),
             "-U", "onair", "-d", self.name, *what],
            capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip())
        return [line.split("\t") for line in out.stdout.splitlines() if line]


def settle(phase):
    """With the clock held: until no event is handled and no kit state
    saved for 2.5 s (at least 3 s, at most 30 s)."""
    db = Db(phase.pg, phase.name)
    first = last = time.monotonic()
    seen = None
    while time.monotonic() - first < 30:
        try:
            now_seen = (db.sql("SELECT COALESCE(MAX(updated_at_ms), 0) FROM integrations"),
                        sum(v for r in phase.live() for k, v in metrics(r, phase.admin).items()
                            if k.startswith("onair_host_events_total")))
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            now_seen = None
        if now_seen != seen:
            seen, last = now_seen, time.monotonic()
        elif time.monotonic() - last >= 2.5 and time.monotonic() - first >= 3:
            return
        time.sleep(0.25)


def judge(args, phase, djs, resumed_ms, end_ms, out):
    """Every DJ with a broadcast: tally = ledger; time to detect of the
    broadcasts that started while the clock ran."""
    fleet = e2e.http_json(f"{phase.control}/fleet")
    plans = {p["dj"]: p for p in fleet["plans"]}
    with_broadcasts = [dj for dj in djs if plans.get(dj, {}).get("sessions")]
    front = phase.live()[-1]
    client_id = phase.client_id

    def one(dj):
        ledger = e2e.http_json(f"{phase.control}/ledger?dj={urllib.parse.quote(dj)}&clientId={client_id}")
        api = front.api(f"/api/bots/{phase.bots[dj]}?events=0")
        problems, truth = e2e.compare_tally(ledger, client_id, single.bot_runs(api))
        delivered = sum(sum(c.get("events", {}).values()) for _, b in truth for c in b.get("connections", []))
        opened = {}
        for live_id, b in truth:
            for c in b.get("connections", []):
                at = c.get("openedAtMs")
                if at is not None:
                    opened[live_id] = min(opened.get(live_id, at), at)
        detect, waiting = [], []
        for s in plans[dj]["sessions"]:
            if not (resumed_ms <= s["startedAtMs"] < end_ms):
                continue
            at = opened.get(s["liveId"])
            if at is not None:
                detect.append((at - s["startedAtMs"]) / 1000)
            else:
                waiting.append((end_ms - s["startedAtMs"]) / 1000)
        return dj, problems, delivered, detect, waiting

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, with_broadcasts))
    differ = [(dj, p) for dj, p, _, _, _ in results if p]
    delivered = sum(d for _, _, d, _, _ in results)
    detect = sorted(t for *_, d, _ in results for t in d)
    waiting = [t for *_, w in results for t in w]

    def pct(q):
        if not detect:
            return None
        return detect[min(len(detect) - 1, int(q * len(detect)))]

    out["judge"] = {"djsWithBroadcasts": len(with_broadcasts), "eventsDelivered": delivered,
                    "djsDiffering": len(differ), "detected": len(detect),
                    "detectMedianS": statistics.median(detect) if detect else None,
                    "detectP95S": pct(0.95), "detectMaxS": detect[-1] if detect else None,
                    "startedNotFound": len(waiting),
                    "startedNotFoundLongestS": max(waiting) if waiting else None,
                    "judgedInS": time.monotonic() - t0}
    log(args, f"  judged {len(with_broadcasts)} DJs with broadcasts in {time.monotonic() - t0:.0f} s: "
              f"{delivered} events delivered (ledger), {len(differ)} DJs whose tally differs")
    for dj, p in differ[:5]:
        log(args, f"    {dj}: {p[:2]}")
    if detect:
        log(args, f"  time to detect ({len(detect)} broadcasts started during the run): median "
                  f"{statistics.median(detect):.1f} s, p95 {pct(0.95):.1f} s, max {detect[-1]:.1f} s; "
                  f"{len(waiting)} started and not found yet"
                  + (f" (waiting up to {max(waiting):.1f} s)" if waiting else ""))
    else:
        log(args, f"  time to detect: no broadcast started and was found during the run "
                  f"({len(waiting)} started and not found yet)")
    return not differ


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onair", default="target/release/onair")
    parser.add_argument("--djs", type=int, default=None, help="DJs (default 10000; --small: 1000)")
    parser.add_argument("--replicas", type=int, default=None, help="default 3 (--small: 2)")
    parser.add_argument("--on-air", type=int, default=10, help="%% of the DJs on air at a time")
    parser.add_argument("--rate", type=float, default=None,
                        help="events a second per live DJ (default 10; --small: 2)")
    parser.add_argument("--budget", type=int, default=None,
                        help="probe_budget_per_s (default 200; --small: 50)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="the fleet's run before the kill (default 120; --small: 30)")
    parser.add_argument("--window", type=float, default=None,
                        help="off air: the probes' window, s (default 30; --small: 15)")
    parser.add_argument("--threads", type=int, default=16,
                        help="consents at a time (the host keeps 20 unfinished consents per address)")
    parser.add_argument("--history-days", type=int, default=7,
                        help="days of each DJ's usual starts the host is given before the fleet "
                             "runs, as if it had watched them (0: a cold start, no history)")
    parser.add_argument("--no-off-air", action="store_true",
                        help="skip the off-air phase (and so the RSS per live bot)")
    parser.add_argument("--small", action="store_true",
                        help="1 000 DJs, 2 replicas, 2 events/s, budget 100, 20 s, no off-air "
                             "phase (the test's size)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = parser.parse_args()
    small = {"djs": 1000, "replicas": 2, "rate": 2.0, "budget": 100, "seconds": 20.0, "window": 15.0}
    full = {"djs": 10_000, "replicas": 3, "rate": 10.0, "budget": 200, "seconds": 120.0, "window": 30.0}
    for k, v in (small if args.small else full).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.small:
        args.no_off_air = True
    if args.replicas < 2:
        parser.error("--replicas: at least 2 (one is killed)")
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="onair-bench-fleet-")
    out = {"djs": args.djs, "replicas": args.replicas, "onAirPercent": args.on_air, "rate": args.rate,
           "budget": args.budget, "seconds": args.seconds, "historyDays": args.history_days}
    try:
        pg = host_replicas.Postgres(work)
    except FileNotFoundError as e:
        print(f"bench-fleet: SKIPPED: {e} not installed (apt-get install postgresql)")
        return 0
    ok = True
    try:
        off_bytes = 0.0
        if not args.no_off_air:
            off_bytes, probes = off_air_phase(args, pg, work, out)
            ok = probes <= args.budget * 1.1
        ok = fleet_phase(args, pg, work, out, off_bytes) and ok
    finally:
        pg.stop()
    out["wallS"] = time.monotonic() - started
    out["ok"] = ok
    if args.json:
        print(json.dumps(out))
    else:
        print(f"bench-fleet: {'ok' if ok else 'FAILED'} in {out['wallS']:.0f} s (logs: {work})")
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
