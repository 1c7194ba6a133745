#!/usr/bin/env bash
# Runs the suite as two pytest processes at once (tests/realparts.py): the
# tests that share real parts (Docker engines, Slurm, Chromium, the fixtures
# shared across modules: "-m 'real and not apart'", in order, as one run of
# the whole suite would) and the rest ("-m 'not real or apart'": pure rules,
# databases, and real tests with a hub, haproxy or command of their own),
# whose work fills the first one's waits. Both print their summary; the exit
# status is the first non-zero of the two.
#
#   scripts/pytest-both.sh [pytest arguments...]
#
# HUBGRID_TEST_SERIAL=1 runs one pytest over everything instead.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTEST=(.venv/bin/python -m pytest -ra --durations=40)

if [[ "${HUBGRID_TEST_SERIAL:-}" == 1 ]]; then
    exec "${PYTEST[@]}" "$@"
fi

LOG="$(mktemp /tmp/hubgrid-pytest-pure.XXXXXX.log)"
# each process its own base temp (pytest empties it when it starts)
"${PYTEST[@]}" -m "not real or apart" --basetemp=/tmp/hubgrid-pytest-pure -p no:cacheprovider "$@" \
    >"$LOG" 2>&1 &
pure=$!
"${PYTEST[@]}" -m "real and not apart" --basetemp=/tmp/hubgrid-pytest-real "$@"
real_rc=$?
wait "$pure"
pure_rc=$?
echo
echo "============ the tests without shared real parts (pure, and apart) ============"
cat "$LOG"
rm -f "$LOG"
# pytest's 5 is "no tests collected": one half of a narrow selection may be empty
for rc in "$real_rc" "$pure_rc"; do
    if [[ "$rc" != 0 && "$rc" != 5 ]]; then
        exit "$rc"
    fi
done
if [[ "$real_rc" == 5 && "$pure_rc" == 5 ]]; then
    exit 5
fi
exit 0
