#!/usr/bin/env bash
# Runs the whole suite: the one-process tests first, then the multi-process tests serially,
# so the two cores are not oversubscribed. Fails if either group fails or if no test ran.
set -uo pipefail
PY=${1:-python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

"$PY" -m pytest -q -m "not multiprocess" tests
unit=$?
"$PY" -m pytest -q -m multiprocess -p no:cacheprovider tests
multi=$?
# pytest exits 5 when nothing was collected: the unit group must always collect tests;
# the multi-process group may be empty only while no such tests exist.
if [ "$unit" -ne 0 ]; then echo "unit tests failed (exit $unit)"; exit 1; fi
if [ "$multi" -ne 0 ] && [ "$multi" -ne 5 ]; then echo "multi-process tests failed (exit $multi)"; exit 1; fi
if [ "$multi" -eq 5 ] && grep -rqs "pytest.mark.multiprocess" tests; then
  echo "multi-process tests exist but none ran"; exit 1
fi
exit 0
