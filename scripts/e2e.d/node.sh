# The Node reference bot: examples/node/bot.mjs on the onair npm package's
# ready-made driver (wasm/npm/driver.js, over the built-in fetch) and the
# configured kit. bot_build builds and packs the package and installs the
# example's dependencies (scripts/test-node --build-only: guarded tool
# installs). Under scripts/test, ONAIR_NODE_BUILT=1 says scripts/test-node
# has just passed in the same run, which built, packed and installed that
# same package into examples/node: it is used as it is (building it again
# took about 20 s, for e2e node and again for the replay).
bot_build() {
  if [ "${ONAIR_NODE_BUILT:-}" = 1 ] && [ -f examples/node/node_modules/onair/package.json ]; then
    echo "the onair package: as scripts/test-node built and installed it in this run (ONAIR_NODE_BUILT=1)"
    return 0
  fi
  scripts/test-node --build-only
}
bot_run() { exec node examples/node/bot.mjs; }
