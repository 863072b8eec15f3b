# The Python bot for scripts/e2e (sourced by the common harness, scripts/e2e.py):
# bot_build installs the onair package (python/, which builds libonair with
# cargo through setuptools-rust) into python/.venv; bot_run execs the venv's
# python on examples/python/bot.py with the harness's environment
# (ONAIR_BASE_URL, …, ONAIR_TALLY_OUT).
ONAIR_PY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ONAIR_PY_VENV="$ONAIR_PY_ROOT/python/.venv"

bot_build() {
  [ -x "$ONAIR_PY_VENV/bin/python" ] || python3 -m venv "$ONAIR_PY_VENV"
  # Reinstall only when the package or libonair's sources changed since the last install.
  local stamp="$ONAIR_PY_VENV/.onair-installed"
  if [ ! -f "$stamp" ] || [ -n "$(find "$ONAIR_PY_ROOT/python/onair" "$ONAIR_PY_ROOT/python/pyproject.toml" \
      "$ONAIR_PY_ROOT/ffi/src" "$ONAIR_PY_ROOT/core/src" -newer "$stamp" -print -quit)" ]; then
    "$ONAIR_PY_VENV/bin/python" -m pip install -q "$ONAIR_PY_ROOT/python" && touch "$stamp"
  fi
}

bot_run() {
  exec "$ONAIR_PY_VENV/bin/python" -u "$ONAIR_PY_ROOT/examples/python/bot.py"
}
