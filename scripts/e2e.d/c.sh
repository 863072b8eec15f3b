# The C bot for scripts/e2e (sourced by the common harness, scripts/e2e.py):
# bot_build builds libonair and examples/c/bot.c; bot_run execs the bot with
# the harness's environment (ONAIR_BASE_URL, …, ONAIR_TALLY_OUT).
ONAIR_C_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

bot_build() {
  command -v curl-config >/dev/null || (apt-get update -qq && apt-get install -y libcurl4-openssl-dev)
  (cd "$ONAIR_C_ROOT" &&
    cargo build -p onair-ffi --locked &&
    mkdir -p target/e2e-c &&
    cc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Iinclude examples/c/bot.c \
      target/debug/libonair.a $(curl-config --libs) -lpthread -lm -ldl -o target/e2e-c/bot)
}

bot_run() {
  exec "$ONAIR_C_ROOT/target/e2e-c/bot"
}
