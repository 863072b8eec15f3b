# The Rust reference bot: `onair demo` against the given deployment (cli/src/refbot.rs,
# on onair-tokio and the kit). Built by scripts/e2e with the CLI.
bot_build() { :; }
bot_run() { exec target/debug/onair demo --remote; }
