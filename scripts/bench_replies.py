#!/usr/bin/env python3
"""Replies in a busy room, before and after (scripts/bench-replies runs it).

Two `onair serve --json --scenario busy` at the same speed, side by side,
one bot on each:

- naive: a bot that says one message per event by hand, as public bots and
  onair's earlier guides did (the Python driver, no replies configured: a
  welcome per arrival, a thank-you per donation, each milestone, each
  command, with `say`): this file run with --naive-bot;
- configured: the reference bot, on the kit's configured replies
  (`onair demo --remote`, cli/src/refbot.rs, as scripts/e2e rust runs it).

Then, per bot and per kind, from the emulator's ledgers: the people named in
a reply within its freshness / the people who should have been (scripts/
e2e.py's replies check parses the names), messages sent, 429 OAPI_MNGR_0302
answers (the emulator's request log), replies dropped (the bot's
repliesDropped notices, as it logs them) and replies sent after their
freshness. Standard library only (the naive bot needs the onair package).
"""

import argparse
import collections
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def load_judge():
    spec = importlib.util.spec_from_file_location("e2e", os.path.join(HERE, "e2e.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KINDS = ("welcome", "welcome_back", "thanks", "milestone", "command")
# A repliesDropped notice as the bots log it: "dropped 3 welcome replies: …".
DROPPED = re.compile(r"dropped (\d+) (welcome_back|welcome|thanks|milestone|command) repl(?:y|ies)")


def naive_bot():
    """The bot of the 'before' column: the reference bot as it was before
    configured replies, every reply said by hand with `say`."""
    import onair  # noqa: PLC0415 (only the bot needs the package)

    env = os.environ.get
    kit = {"commands": [{"name": "hello"}, {"name": "top"}],
           "greetings": {"welcome_back_after_ms": 600000},
           "milestones": {"hearts_every": 100, "donations_every": 1000}, "tally": True}
    config = onair.Config(env("ONAIR_BASE_URL", ""), env("ONAIR_CLIENT_ID", ""),
                          env("ONAIR_CLIENT_SECRET", ""), kit=kit)
    bot = onair.Driver(config, code=env("ONAIR_CODE"), redirect_uri=env("ONAIR_REDIRECT_URI"))

    def name(user):
        return user.nickname or "friend" if user else "friend"

    @bot.on_arrival
    def welcome(a):
        bot.say(f"Welcome, {name(a.user)}! 🎧" if a.kind == "first" else f"Welcome back, {name(a.user)}!")

    @bot.command("hello")
    def hello(c):
        bot.say(f"Hello, {name(c.user)}!")

    @bot.command("top")
    def top(c):
        k = bot.kit()
        donors = k.tally.donors()[:10] if k else []
        listed = (f"{i}. {p.nickname or pid} {p.donated}" for i, (pid, p) in enumerate(donors, 1))
        bot.say(f"Top donors: {' · '.join(listed)}" if donors else "Top donors: No donations yet tonight.")

    @bot.on_donation
    def thanks(d):
        bot.say(f"Thank you, {name(d.user)}!")

    @bot.on_milestone
    def milestone(m):
        bot.say(f"{m.reached} hearts tonight! 💜" if m.kind == "hearts"
                else f"{name(m.user)} has given {m.reached} tonight!")

    stop = onair.run(bot)
    return 0 if stop is None or stop.code == "shut_down" else 1


def should_have(b, judge, kit):
    """Per kind, what the bot should have said in broadcast `b`: the people
    (welcome, welcome back, thanks) or milestones (("hearts", n) or
    ((pid, n))) the kit makes replies of."""
    out = {kind: set() for kind in KINDS}
    last_seen = {}
    events = []
    for pid, signs in b.signs.items():
        events += [(ms, "sign", pid, 0) for ms, _ in signs]
    for pid, gifts in b.donations.items():
        events += [(ms, "donation", pid, amount) for ms, amount, _ in gifts]
    events += [(ms, "like", None, hearts) for ms, hearts, _ in b.likes]
    events.sort(key=lambda e: e[0])
    back_after = kit["greetings"]["welcome_back_after_ms"]
    hearts_every, donations_every = kit["milestones"]["hearts_every"], kit["milestones"]["donations_every"]
    hearts, given = 0, collections.Counter()
    greeted = set()
    for ms, what, pid, amount in events:
        if what == "sign":
            if pid not in greeted:
                greeted.add(pid)
                out["welcome"].add(pid)
            elif ms - last_seen.get(pid, ms) >= back_after:
                out["welcome_back"].add(pid)
        if pid is not None:
            last_seen[pid] = ms
        if what == "donation":
            out["thanks"].add(pid)
            before, given[pid] = given[pid], given[pid] + amount
            if given[pid] // donations_every > before // donations_every:
                out["milestone"].add((pid, given[pid] // donations_every * donations_every))
        if what == "like":
            before, hearts = hearts, hearts + amount
            if hearts // hearts_every > before // hearts_every:
                out["milestone"].add(("hearts", hearts // hearts_every * hearts_every))
    return out


def measure(judge, name, world, speed, kit, log_text):
    """The row of one bot: per kind {named, should, messages, dropped, late},
    and the 429 0302 answers."""
    ledger, frames, chat, requests, client_id = (
        world["ledger"], world["frames"], world["chat"], world["requests"], world["clientId"])
    problems, replies = judge.check_replies(chat, frames, ledger, client_id, speed, slack_ms=1_000)
    lives = sorted({f.get("liveId") for f in frames if f.get("liveId") is not None})
    people_of = {}
    for bc in ledger.get("broadcasts", []):
        for bot in bc.get("bots", []):
            if bot.get("clientId") == client_id:
                people_of[bc.get("liveId")] = (bot.get("totals") or {}).get("people") or {}
    should = {kind: set() for kind in KINDS}
    for live in lives:
        b = judge.Broadcast(live, people_of.get(live, {}), frames)
        for kind, items in should_have(b, judge, kit).items():
            should[kind] |= {(live, item) for item in items}
    rows = {kind: {"named": set(), "messages": 0, "late": 0, "dropped": 0} for kind in KINDS}
    for r in replies:
        row = rows[r["kind"]]
        row["messages"] += 1
        row["late"] += 1 if r["late"] else 0
        if r["what"] == "hearts" and not r["late"]:
            row["named"].add((r["liveId"], ("hearts", int(r["message"].split(" ")[0]))))
        elif r["what"] == "donated":
            if not r["late"] and r["named"] and r["named"][0][2]:
                reached = int(re.search(r"has given (\d+) tonight!$", r["message"]).group(1))
                row["named"].add((r["liveId"], (r["named"][0][0], reached)))
        else:
            row["named"] |= {(r["liveId"], pid) for pid, _, ok in r["named"] if ok and pid}
    for m in DROPPED.finditer(log_text):
        rows[m.group(2)]["dropped"] += int(m.group(1))
    for kind in KINDS:
        rows[kind]["should"] = len(should[kind]) if kind != "command" else None
        rows[kind]["named"] = (len(rows[kind]["named"] & should[kind]) if kind != "command"
                               else len(rows[kind]["named"]))
    limited = sum(1 for r in requests
                  if r["path"] == "/v1/live/chat" and r["status"] == 429 and "quota" not in r)
    sent = sum(1 for c in chat if c.get("clientId") == client_id)
    return {"bot": name, "kinds": rows, "chatLimited": limited, "messages": sent,
            "problems": problems}


def run_one(args, name, command, env_extra, out):
    """One `onair serve` and one bot on it, the scenario played; the
    emulator's ledgers into out[name]."""
    work = tempfile.mkdtemp(prefix=f"onair-bench-replies-{name}-")
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", "--scenario", args.scenario, "--speed", str(args.speed)],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"))
    bot = None
    log_path = os.path.join(work, "bot.log")
    judge = load_judge()
    try:
        ready, _, _ = select.select([serve.stdout], [], [], 30)
        if not ready:
            out[name] = {"error": "onair serve did not say where it is within 30 s"}
            return
        info = json.loads(serve.stdout.readline())
        control = info["controlUrl"]
        consent = judge.http_json(f"{control}/consent", {})
        env = dict(os.environ, ONAIR_BASE_URL=info["baseUrl"], ONAIR_CLIENT_ID=info["clientId"],
                   ONAIR_CLIENT_SECRET=info["clientSecret"], ONAIR_REDIRECT_URI=info["redirectUri"],
                   ONAIR_CODE=consent["code"], ONAIR_TOKENS_FILE=os.path.join(work, "tokens.json"),
                   ONAIR_STATE_FILE=os.path.join(work, "state.json"),
                   ONAIR_TALLY_OUT=os.path.join(work, "tally.json"), **env_extra)
        bot = subprocess.Popen(command, env=env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
                               start_new_session=True)
        started = time.monotonic()
        while not judge.http_json(f"{control}/scenario").get("done"):
            if bot.poll() is not None:
                out[name] = {"error": f"the bot exited early ({bot.returncode}); log: {log_path}"}
                return
            if time.monotonic() - started > args.timeout:
                out[name] = {"error": f"the scenario did not finish within {args.timeout} s"}
                return
            time.sleep(0.5)
        time.sleep(3)  # the last replies (what is queued at the end is dropped)
        os.killpg(bot.pid, signal.SIGTERM)
        try:
            bot.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(bot.pid, signal.SIGKILL)
        client = info["clientId"]
        out[name] = {
            "clientId": client,
            "ledger": judge.http_json(f"{control}/ledger"),
            "frames": judge.http_json(f"{control}/frames?clientId={client}")["frames"],
            "chat": judge.http_json(f"{control}/chat")["messages"],
            "requests": judge.http_json(f"{control}/requests?clientId={client}")["requests"],
            "log": open(log_path, encoding="utf-8", errors="replace").read(),
            "seconds": time.monotonic() - started,
            "work": work,
        }
        with open(os.path.join(work, "world.json"), "w", encoding="utf-8") as f:
            json.dump({k: v for k, v in out[name].items() if k != "log"}, f)
    except Exception as e:  # a bench: say it, the other bot goes on
        out[name] = {"error": f"{type(e).__name__}: {e} (logs: {work})"}
    finally:
        judge.stop_all(bot, serve)


def pct(named, should):
    if should is None:
        return f"{named} named"
    if should == 0:
        return "0 / 0"
    return f"{named} / {should} ({100 * named / should:.1f} %)"


def table(results):
    lines = [
        "| bot | kind | named within freshness / should have been | messages | replies dropped (told) | sent after freshness |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in results:
        for kind in KINDS:
            row = r["kinds"][kind]
            if not (row["messages"] or row["should"] or row["dropped"]):
                continue
            dropped = row["dropped"] if r["bot"] != "naive" else "— (none told)"
            lines.append(f"| {r['bot']} | {kind} | {pct(row['named'], row['should'])} | "
                         f"{row['messages']} | {dropped} | {row['late']} |")
    lines.append("")
    lines.append("| bot | chat messages sent | 429 OAPI_MNGR_0302 answers |")
    lines.append("|---|---:|---:|")
    for r in results:
        lines.append(f"| {r['bot']} | {r['messages']} | {r['chatLimited']} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        prog="scripts/bench-replies",
        description="Replies in a busy room, before and after: a naive bot (one `say` per event) "
        "and the reference bot (configured replies), each on its own `onair serve --scenario busy`, "
        "side by side; per kind the people named within the freshness, messages, 429 0302 "
        "answers, replies dropped and sent late. Not part of scripts/test.")
    parser.add_argument("--onair", default=os.path.join(ROOT, "target", "release", "onair"))
    parser.add_argument("--python", default=sys.executable,
                        help="the Python that runs the naive bot (with httpx)")
    parser.add_argument("--lib", default=os.path.join(ROOT, "target", "release", "libonair.so"))
    parser.add_argument("--scenario", default="busy")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--only", choices=("naive", "configured"))
    parser.add_argument("--json", help="also write the measurements to this file")
    parser.add_argument("--naive-bot", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.naive_bot:
        return naive_bot()
    judge = load_judge()
    bots = {
        "naive": ([args.python, "-u", os.path.abspath(__file__), "--naive-bot"],
                  {"PYTHONPATH": os.path.join(ROOT, "python"), "ONAIR_LIB": args.lib}),
        "configured": ([args.onair, "demo", "--remote"], {}),
    }
    names = [args.only] if args.only else list(bots)
    out = {}
    threads = [threading.Thread(target=run_one, args=(args, n, *bots[n], out)) for n in names]
    print(f"bench-replies: {', '.join(names)} on `onair serve --scenario {args.scenario} "
          f"--speed {args.speed:g}`, side by side…", flush=True)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results, failed = [], False
    kit = judge.REFERENCE_KIT
    for n in names:
        world = out.get(n, {"error": "no result"})
        if "error" in world:
            print(f"bench-replies: {n}: {world['error']}")
            failed = True
            continue
        r = measure(judge, n, world, args.speed, kit, world["log"])
        r["seconds"] = world["seconds"]
        results.append(r)
        print(f"bench-replies: {n}: {world['seconds']:.0f} s; logs {world['work']}")
        for p in r["problems"][:5]:
            print(f"  judge: {p}")
        if r["problems"]:
            print(f"  ({len(r['problems'])} reply problem(s) in all)")
    print()
    print(table(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{k: v for k, v in r.items()} for r in results], f, indent=1, default=list)
    for r in results:
        if r["bot"] == "configured":
            k = r["kinds"]
            ok = all(
                k[kind]["should"] == 0 or k[kind]["named"] >= 0.95 * k[kind]["should"]
                for kind in ("welcome", "thanks")
            ) and all(k[kind]["late"] == 0 for kind in KINDS)
            print(f"\ngoals (configured: >= 95 % of arrivals greeted within 60 s and of donors "
                  f"thanked, none sent after its freshness): {'met' if ok else 'NOT met'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
