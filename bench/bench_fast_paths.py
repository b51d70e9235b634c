"""Each 2-process fast path of the collective layer against the general packed path.

Run from the repository root with the project's environment::

    python bench/bench_fast_paths.py              # 3 invocations of the child (a few minutes)
    python bench/bench_fast_paths.py --smoke      # checks that everything runs

Every invocation starts 2 worker processes with ``distribute.launch`` (1 intra-op thread each,
gloo on localhost) running ``bench/fast_paths_children/pairs.py``. In it, for each fast path and
each size it applies to, the same all-reduce is planned twice (once with only that fast path on,
once with it off: the general path) and both are timed in alternating turns (``_peer.paired``:
2 untimed calls start each turn, which of the two goes first alternates), so that a pair's
ratio (fast seconds per call / general seconds per call) is taken under one moment's load.
Printed per comparison and size: the median of all pairs' ratios, their quartiles, and the
median of each invocation (the run-to-run spread). A ratio below 1 means the fast path is faster.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Dict, List

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "src"))

from distribute.launch import launch  # noqa: E402

CHILD = BENCH_DIR / "fast_paths_children" / "pairs.py"


def one_invocation(smoke: bool) -> Dict[str, Dict[str, List[float]]]:
    """The child's ratios, from worker 0."""
    env = {"PYTHONPATH": str(BENCH_DIR.parent / "src"), "OMP_NUM_THREADS": "1"}
    result = launch([sys.executable, str(CHILD), "smoke" if smoke else "full"], workers=2, timeout=900, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"pairs.py failed (status {result.returncode}):\n{result.output[-4000:]}")
    lines = [line for line in result.tasks["worker:0"].output.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1][len("RESULT "):])


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KB"


def report(runs: List[Dict[str, Dict[str, List[float]]]]) -> str:
    """A markdown table: comparison, size, pooled median, quartiles, per-invocation medians."""
    rows = ["| fast path | size | pairs | median fast ÷ general | quartiles | per invocation |",
            "|---|---:|---:|---:|---:|---|"]
    for name, sizes in runs[0].items():
        for size in sizes:
            pooled = sorted(r for run in runs for r in run[name][size])
            q = statistics.quantiles(pooled, n=4) if len(pooled) > 1 else [pooled[0]] * 3
            each = ", ".join(f"{statistics.median(run[name][size]):.2f}" for run in runs)
            rows.append(f"| {name} | {_size(int(size))} | {len(pooled)} | {statistics.median(pooled):.2f} | "
                        f"{q[0]:.2f}–{q[2]:.2f} | {each} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invocations", type=int, default=3, help="child invocations (rounds)")
    parser.add_argument("--smoke", action="store_true", help="one short invocation (checks that it runs)")
    args = parser.parse_args()
    runs = []
    for i in range(1 if args.smoke else args.invocations):
        runs.append(one_invocation(args.smoke))
        print(f"invocation {i + 1}: {json.dumps(runs[-1])}", flush=True)
    print(report(runs))


if __name__ == "__main__":
    main()
