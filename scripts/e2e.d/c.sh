# The C bot for scripts/e2e (sourced by the common harness, scripts/e2e.py):
# bot_build installs libonair (scripts/install-c into target/e2e-c/prefix) and
# builds examples/c/bot.c against it through pkg-config; bot_run execs the bot with
# the harness's environment (ONAIR_BASE_URL, …, ONAIR_TALLY_OUT).
ONAIR_C_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

bot_build() {
  . "$ONAIR_C_ROOT/scripts/need.sh"
  need_apt curl-config libcurl4-openssl-dev
  need_apt pkg-config pkg-config
  (cd "$ONAIR_C_ROOT" &&
    scripts/install-c target/e2e-c/prefix --debug &&
    export PKG_CONFIG_PATH="$ONAIR_C_ROOT/target/e2e-c/prefix/lib/pkgconfig" &&
    cc -std=c11 -O2 -Wall -Wextra -Werror -pedantic examples/c/bot.c \
      $(pkg-config --cflags --libs onair) $(curl-config --libs) \
      -Wl,-rpath,"$(pkg-config --variable=libdir onair)" -o target/e2e-c/bot)
}

bot_run() {
  exec "$ONAIR_C_ROOT/target/e2e-c/bot"
}
