#!/usr/bin/env bash
# Every script answers --help with its usage and does nothing else: each one
# runs with --help on a PATH that holds only `cat` (and python3 for the Python
# ones), so any build, install or download it tried would fail; it must exit
# 0 and print its usage (naming how it is run). Exit 1 when any does otherwise.
#   bash scripts/e2e.d/help.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in -h | --help) sed -n '2,5s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
ln -s "$(command -v cat)" "$bin/cat"
ln -s "$(python3 -c 'import sys; print(sys.executable)')" "$bin/python3"
bash=$(command -v bash)
failed=0 checked=0
for script in scripts/* python/build-wheel python/build-dist; do
    [ -f "$script" ] && [ -x "$script" ] || continue
    case "$script" in *.py | */need.sh) continue ;; esac
    checked=$((checked + 1))
    if head -1 "$script" | grep -q python; then
        out=$(cd /tmp && PATH="$bin" "$bin/python3" "$OLDPWD/$script" --help 2>&1 </dev/null)
    else
        out=$(cd /tmp && PATH="$bin" "$bash" "$OLDPWD/$script" --help 2>&1 </dev/null)
    fi
    status=$?
    first=$(printf '%s\n' "$out" | head -1)
    if [ "$status" -ne 0 ] || ! printf '%s' "$out" | grep -qF "$script"; then
        echo "FAILED $script --help: exit $status, first line: ${first:-(nothing)}"
        printf '%s\n' "$out" | head -5 | sed 's/^/    /'
        failed=$((failed + 1))
    fi
done
echo "$((checked - failed)) passed, $failed failed (scripts answering --help with their usage alone)"
[ "$failed" -eq 0 ]
