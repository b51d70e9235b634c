#!/usr/bin/env bash
# Runs the multi-process tests (`pytest -m multiprocess`) N times in a row, stopping at the first
# failure, with LOAD CPU-bound burner processes running beside them (always killed at the end).
# Prints one line per round: its number, pass/FAIL and duration.
#   usage: scripts/repeat_tests.sh PYTHON [N] [LOAD] [pytest args...]    (make test-repeat N=10 LOAD=2)
set -uo pipefail
PY=${1:-python3}
N=${2:-10}
LOAD=${3:-0}
shift $(( $# < 3 ? $# : 3 ))
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
case "$N$LOAD" in *[!0-9]*) echo "N and LOAD must be whole numbers; received N=$N LOAD=$LOAD" >&2; exit 2;; esac

burners=()
stop_burners() {
  for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${burners[@]}"; do wait "$pid" 2>/dev/null; done
  burners=()
}
trap stop_burners EXIT
trap 'stop_burners; exit 130' INT TERM
for _ in $(seq 1 "$LOAD"); do
  "$PY" -c "while True: pass" &
  burners+=("$!")
done

logs=$(mktemp -d)
echo "repeating the multi-process tests $N times with $LOAD CPU burner(s); logs in $logs"
for round in $(seq 1 "$N"); do
  start=$(date +%s%N)
  "$PY" -m pytest -q -p no:cacheprovider -m multiprocess "$@" tests >"$logs/round-$round.log" 2>&1
  status=$?
  tenths=$(( ($(date +%s%N) - start) / 100000000 ))
  took="$((tenths / 10)).$((tenths % 10)) s"
  if [ "$status" -eq 0 ]; then
    echo "round $round/$N: pass ($took)"
  else
    echo "round $round/$N: FAIL (status $status, $took); log: $logs/round-$round.log"
    tail -n 30 "$logs/round-$round.log"
    exit "$status"
  fi
done
echo "all $N rounds passed"
