"""scripts/dist's Python bot: greets, thanks, prints the broadcast's tally when it ends, stops."""
import json, os, onair  # noqa: E401
env = os.environ.get
config = onair.Config(env("ONAIR_BASE_URL", ""), env("ONAIR_CLIENT_ID", ""), env("ONAIR_CLIENT_SECRET", ""),
                      kit={"greetings": {}, "tally": True})
bot = onair.Driver(config, code=env("ONAIR_CODE"), redirect_uri=env("ONAIR_REDIRECT_URI"))
@bot.on_broadcast_ended
def ended(b: onair.BroadcastEnded) -> None:
    print(json.dumps({**b.tally.to_dict(), "liveId": b.live_id}), flush=True)
    bot.shutdown()
stop = onair.run(bot)
raise SystemExit(0 if stop is None or stop.code == "shut_down" else 1)
