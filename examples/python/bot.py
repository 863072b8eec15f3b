"""The reference bot (scripts/e2e.d/README.md) on onair's asyncio driver and the configured kit."""

import json
import os
import sys

import onair

env = os.environ.get
# The kit's configured replies greet, thank, call milestones and answer !hello and !top
# (the core's default texts), merged when chat is behind, dropped (logged) when stale.
KIT = {"commands": [{"name": "hello"}, {"name": "top"}], "greetings": {"welcome_back_after_ms": 600000},
       "milestones": {"hearts_every": 100, "donations_every": 1000}, "tally": True,
       "replies": {"commands": {"hello": "Hello, {nickname}!", "top": "Top donors: {top}"}}}
config = onair.Config(env("ONAIR_BASE_URL", ""), env("ONAIR_CLIENT_ID", ""), env("ONAIR_CLIENT_SECRET", ""),
                      kit=KIT, watchdog_ms=int(env("ONAIR_WATCHDOG_MS") or 45000))
tokens, state = (onair.FileStore(p) if (p := env(v)) else None for v in ("ONAIR_TOKENS_FILE", "ONAIR_STATE_FILE"))
bot = onair.Driver(config, tokens=tokens, state=state, code=env("ONAIR_CODE"), redirect_uri=env("ONAIR_REDIRECT_URI"))
broadcasts: list[dict[str, object]] = []
arrivals: list[dict[str, object]] = []
REMINDER, EVERY_MS = "Say !hello to say hi, or !top for tonight's top donors.", 30 * 60 * 1000
reminding = False

@bot.on(onair.Chat, onair.Presence, onair.Like, onair.Donation, onair.End)
def remind(_: object) -> None:  # the first event: the reminder from now on, while connected
    global reminding
    if not reminding:
        bot.set_timer("announce", onair.now_ms() + EVERY_MS, EVERY_MS, while_connected=True)
        reminding = True

@bot.on_timer
def announce(_: onair.Timer) -> str:  # said as it is (no person's reply)
    return REMINDER

@bot.on_arrival
def arrived(a: onair.Arrival) -> None:  # greeted by the kit; recorded for the tally file
    arrivals.append({"liveId": a.live_id, "id": a.user.id, "kind": a.kind})

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
