# The Python bot for scripts/e2e (sourced by the common harness, scripts/e2e.py):
# bot_build builds the onair wheel (python/build-wheel: libonair, then hatchling)
# and installs it, with httpx, into target/py-e2e-venv (again only when the
# wheel changed); bot_run execs that venv's python on examples/python/bot.py
# (the reference bot on onair's asyncio driver) with the harness's environment.
ONAIR_PY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ONAIR_PY_VENV="$ONAIR_PY_ROOT/target/py-e2e-venv"

bot_build() {
  local wheel sum stamp="$ONAIR_PY_VENV/.onair-wheel"
  wheel=$("$ONAIR_PY_ROOT/python/build-wheel" | tail -1)
  sum=$(sha256sum "$ONAIR_PY_ROOT/$wheel" | cut -d' ' -f1)
  if [ ! -x "$ONAIR_PY_VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
    rm -rf "$ONAIR_PY_VENV"
    python3 -m venv "$ONAIR_PY_VENV"
    "$ONAIR_PY_VENV/bin/python" -m pip install -q --disable-pip-version-check "$ONAIR_PY_ROOT/$wheel"
    echo "$sum" > "$stamp"
  fi
}

bot_run() {
  exec "$ONAIR_PY_VENV/bin/python" -u "$ONAIR_PY_ROOT/examples/python/bot.py"
}
