// scripts/dist's Node bot: greets, thanks, prints the broadcast's tally when it ends, stops.
import { Driver } from 'onair';
const env = process.env;
const driver = new Driver({
  baseUrl: env.ONAIR_BASE_URL, clientId: env.ONAIR_CLIENT_ID, clientSecret: env.ONAIR_CLIENT_SECRET,
  kit: { greetings: {}, tally: true },
  authorize: () => ({ code: env.ONAIR_CODE, redirectUri: env.ONAIR_REDIRECT_URI }),
});
driver.on('broadcastEnded', (b) => void (console.log(JSON.stringify({ liveId: b.liveId, ...b.tally })), driver.shutdown()));
process.exitCode = (await driver.run())?.code === 'shut_down' ? 0 : 1;
