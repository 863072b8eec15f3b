# The Node reference bot: examples/node/bot.mjs on the onair npm package's
# ready-made driver (wasm/npm/driver.js, over the built-in fetch) and the
# configured kit. bot_build builds and packs the package and installs the
# example's dependencies (scripts/test-node --build-only: guarded tool
# installs).
bot_build() { scripts/test-node --build-only; }
bot_run() { exec node examples/node/bot.mjs; }
