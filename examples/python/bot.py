"""The reference bot (scripts/e2e.d/README.md) on onair's asyncio driver and the configured kit."""

import json
import os
import sys

import onair

env = os.environ.get
KIT = {"commands": [{"name": "hello"}, {"name": "top"}], "greetings": {"welcome_back_after_ms": 600000},
       "milestones": {"hearts_every": 100, "donations_every": 1000}, "tally": True}
config = onair.Config(env("ONAIR_BASE_URL", ""), env("ONAIR_CLIENT_ID", ""), env("ONAIR_CLIENT_SECRET", ""),
                      kit=KIT, watchdog_ms=int(env("ONAIR_WATCHDOG_MS") or 45000))
tokens, state = (onair.FileStore(p) if (p := env(v)) else None for v in ("ONAIR_TOKENS_FILE", "ONAIR_STATE_FILE"))
bot = onair.Driver(config, tokens=tokens, state=state, code=env("ONAIR_CODE"), redirect_uri=env("ONAIR_REDIRECT_URI"))
broadcasts: list[dict[str, object]] = []
arrivals: list[dict[str, object]] = []

def name(user: onair.User | None) -> str:
    return user.nickname or "friend" if user else "friend"

@bot.on_arrival
def welcome(a: onair.Arrival) -> str:
    arrivals.append({"liveId": a.live_id, "id": a.user.id, "kind": a.kind})
    return f"Welcome, {name(a.user)}! 🎧" if a.kind == "first" else f"Welcome back, {name(a.user)}!"

@bot.command("hello")
def hello(c: onair.Command) -> str:
    return f"Hello, {name(c.user)}!"

@bot.command("top")
def top(c: onair.Command) -> str:
    kit = bot.kit()
    donors = kit.tally.donors()[:10] if kit else []
    listed = (f"{i}. {p.nickname or pid} {p.donated}" for i, (pid, p) in enumerate(donors, 1))
    return f"Top donors: {' · '.join(listed)}" if donors else "No donations yet tonight."

@bot.on_donation
def thanks(d: onair.Donation) -> str:
    return f"Thank you, {name(d.user)}!"

@bot.on_milestone
def milestone(m: onair.Milestone) -> str:
    return f"{m.reached} hearts tonight! 💜" if m.kind == "hearts" else f"{name(m.user)} has given {m.reached} tonight!"

@bot.on_broadcast_ended
def ended(b: onair.BroadcastEnded) -> None:
    broadcasts.append({**b.tally.to_dict(), "liveId": b.live_id})
    if path := env("ONAIR_ENDS_OUT"):
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"liveId": b.live_id}) + "\n")

stop = onair.run(bot)  # SIGINT/SIGTERM: shut down (no revoke), the state saved, every stream closed
if (kit := bot.kit()) and (path := env("ONAIR_TALLY_OUT")):
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"broadcasts": [*broadcasts, {**kit.tally.to_dict(), "liveId": kit.live_id}], "arrivals": arrivals}, f)
if stop is not None and stop.code == "reauthorize":  # a code refused, expired or used, or none
    print("the DJ must consent again: set ONAIR_CODE to the new code (it lasts 60 s), then start again", file=sys.stderr)
sys.exit(0 if stop is None or stop.code == "shut_down" else 1)
