#!/usr/bin/env bash
# The README's test command: the static checks (ruff, mypy), then the whole suite in one pytest
# session: the one-process tests and the multi-process tests (marked `multiprocess`, which start
# real worker processes on localhost). Fails if a check fails or no test ran.
set -uo pipefail
PY=${1:-python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
BIN=$(dirname "$PY")

"$BIN/ruff" check src tests bench scripts examples || { echo "ruff found problems"; exit 1; }
"$PY" -m mypy || { echo "mypy found problems"; exit 1; }

"$PY" -m pytest -q -p no:cacheprovider tests
status=$?
# pytest exits 5 when it collected nothing: that is a failure too.
if [ "$status" -eq 5 ]; then echo "no test ran"; exit 1; fi
exit "$status"
