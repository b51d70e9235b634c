"""Parameter-server training: our ParameterServerStrategy against TensorFlow 2.21's (issue 17 section 4).

Run from the repository root with the project's environment::

    DISTRIBUTE_BENCH_TF_PYTHON=/path/to/tf/venv/bin/python python bench/bench_ps.py
    python bench/bench_ps.py --only tf      # one side only (printed, not written)
    python bench/bench_ps.py --smoke        # a quick check that everything runs (printed, not written)

Each side runs in its own child (bench/ps_children/), which is the coordinator (chief) of its
own cluster on 127.0.0.1: 2 worker and 2 ps server processes, 1 intra-op thread each
(``OMP_NUM_THREADS=1``), killed when the child ends or dies. Both sides use the same cluster
shape, models, batch and optimizer, and both build the strategy with
``FixedShardsPartitioner(2)``:

* closures: a trivial function (``tf.function`` / ``distribute.function`` returning 1) scheduled
  N times, then ``join``: closures per second, and the coordinator's cost per ``schedule`` call
  (the time of the N ``schedule`` calls alone, divided by N);
* MLP 64-256-256-10, batch 256, SGD lr 0.1, variables on the ps: examples/s;
* embedding: a 100,000 x 64 table sharded over the 2 ps, ids of batch 256 x 8, mean-pool, linear
  head, SGD lr 0.1 (row updates): examples/s.

N is sized so one timed repeat takes ``--seconds``; a child reports the best of 3 repeats. The
children run in rounds (order rotated); each round records the CPU used by foreign processes
(common.ForeignLoad). TensorFlow's interpreter is named by DISTRIBUTE_BENCH_TF_PYTHON; without it
the TF side is reported as skipped, as is our side while ``distribute.ParameterServerStrategy``
does not exist. The section "ps" of bench/RESULTS.md is written only by a full run of both sides.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from common import (  # noqa: E402
    child_env, fmt, invocation_log, log_table, machine_line, median, paired_rounds, table, version_of,
    write_section,
)

CHILDREN = BENCH_DIR / "ps_children"
MIN_CLEAN = 2
SIDES = ("ours", "tf")

# (label, value from one side's output, digits, goal on ours ÷ TF or None, goal text, higher is better)
Row = Tuple[str, Callable[[dict], float], int, Optional[float], str, bool]
ROWS: List[Row] = [
    ("trivial closures/s (schedule N, join)", lambda o: o["closures"]["per_second"], 0, 3.0, "≥ 3x TF", True),
    ("coordinator cost per `schedule` call, µs", lambda o: o["closures"]["schedule_us"], 1, None,
     "(reported)", False),
    ("MLP 64-256-256-10 examples/s", lambda o: o["mlp"]["examples_per_second"], 0, 1.0, "≥ 1.0x TF", True),
    ("embedding 100,000 x 64, 256 x 8 ids, examples/s", lambda o: o["embedding"]["examples_per_second"], 0,
     1.0, "≥ 1.0x TF", True),
]


def tf_interpreter() -> Tuple[Optional[str], str]:
    """TensorFlow's interpreter, or None and why the TF side is skipped."""
    python = os.environ.get("DISTRIBUTE_BENCH_TF_PYTHON", "")
    if not python:
        return None, "DISTRIBUTE_BENCH_TF_PYTHON is not set"
    if not os.access(python, os.X_OK):
        return None, f"DISTRIBUTE_BENCH_TF_PYTHON={python} is not an executable file"
    return python, ""


def ours_available() -> Tuple[bool, str]:
    """Whether this checkout has the parameter-server runtime, or why our side is skipped."""
    code = "import distribute, sys; sys.exit(0 if hasattr(distribute, 'ParameterServerStrategy') else 3)"
    status = subprocess.run([sys.executable, "-c", code], env=child_env(1), capture_output=True).returncode
    return status == 0, "" if status == 0 else "distribute.ParameterServerStrategy does not exist in this checkout"


def sides(only: Optional[str]) -> Tuple[List[tuple], Dict[str, str]]:
    """The children to run, and the reason for each side that is skipped."""
    children, skipped = [], {}
    tf_py, why = tf_interpreter()
    ours, why_ours = ours_available()
    if only in (None, "ours"):
        if ours:
            children.append(("ours", sys.executable, CHILDREN / "ours_ps.py"))
        else:
            skipped["ours"] = why_ours
    if only in (None, "tf"):
        if tf_py:
            children.append(("tf", tf_py, CHILDREN / "tf_ps.py"))
        else:
            skipped["tf"] = why
    return children, skipped


def summarize(records: List[dict], present: List[str]) -> Dict[str, Any]:
    """Medians over the clean rounds (all rounds, flagged, when too few were clean)."""
    clean = [r for r in records if r["clean"]]
    used = clean if len(clean) >= min(MIN_CLEAN, len(records)) else records
    values: Dict[str, List[Optional[float]]] = {side: [] for side in SIDES}
    ratios: List[Optional[float]] = []
    for _, value, *_ in ROWS:
        for side in SIDES:
            values[side].append(median([value(r[side]) for r in used]) if side in present else None)
        both = all(side in present for side in SIDES)
        ratios.append(median([value(r["ours"]) / value(r["tf"]) for r in used]) if both else None)
    return {"values": values, "ratios": ratios, "clean": len(clean), "total": len(records),
            "flagged": used is records and len(clean) < len(records),
            "steps": {side: used[-1][side] for side in present}}


def _verdict(row: Row, ratio: Optional[float]) -> str:
    goal = row[3]
    if goal is None or ratio is None:
        return "-"
    return "met" if ratio >= goal else "**not met**"


def report(summary: Dict[str, Any], skipped: Dict[str, str], command: str, versions: Dict[str, str],
           log: List[str]) -> str:
    """The markdown of the section."""
    rows = []
    for i, row in enumerate(ROWS):
        ours, tf, ratio = summary["values"]["ours"][i], summary["values"]["tf"][i], summary["ratios"][i]
        rows.append([row[0], fmt(ours, row[2]), fmt(tf, row[2]), "-" if ratio is None else fmt(ratio) + "x",
                     row[4], _verdict(row, ratio)])
    flag = " (FLAGGED: too few clean rounds; medians over all)" if summary["flagged"] else ""
    notes = [f"**{side} side skipped: {why}.**" for side, why in skipped.items()]
    lines = [
        "## ps: ParameterServerStrategy + ClusterCoordinator against TensorFlow 2.21 (issue 17 section 4)",
        "",
        f"Command: `{command}` (repository root, project environment). Run {datetime.date.today().isoformat()} "
        f"on {machine_line()}; torch {versions.get('torch', '?')}, TensorFlow {versions.get('tf', '-')}. Each "
        "side is the coordinator (chief) of its own cluster on 127.0.0.1: 2 worker and 2 ps server processes, "
        "1 intra-op thread each; variables on the ps with `FixedShardsPartitioner(2)`; TF over gRPC "
        "(`tf.distribute.Server`, the tutorial's `strategy.run` + `GradientTape` step in a `tf.function`, "
        "batches from `create_per_worker_dataset`). "
        f"{summary['clean']}/{summary['total']} rounds clean{flag}. Figures are medians over rounds of each "
        "child's best of 3 timed repeats; ratios are medians of per-round ratios.",
        "",
        table(["workload (batch 256, SGD lr 0.1)", "distribute", "TensorFlow 2.21", "ours ÷ TF", "goal",
               "verdict"], rows),
    ]
    if notes:
        lines += [""] + notes
    if log:
        lines += ["", "Ratios ours ÷ TF of this and earlier invocations (newest first; a goal counts as met when "
                  "it is met in at least 2 of 3 invocations, spec/performance.md section 3):", "",
                  log_table(["closures/s", "schedule µs", "MLP ex/s", "embedding ex/s"], log)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=SIDES, help="run one side only (printed, not written)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds to run at least")
    parser.add_argument("--max-rounds", type=int, default=2, help="rounds at most, if some are not clean")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per timed repeat in a child")
    parser.add_argument("--smoke", action="store_true", help="one short round (checks that it runs)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.max_rounds, args.seconds = 1, 1, 0.3
    children, skipped = sides(args.only)
    if not children:
        sys.exit("bench_ps: nothing to run: " + "; ".join(f"{s}: {w}" for s, w in skipped.items()))
    records = paired_rounds(children, ["--seconds", str(args.seconds)], args.rounds, args.max_rounds,
                            min(MIN_CLEAN, args.rounds))
    present = [label for label, *_ in children]
    summary = summarize(records, present)
    versions = {"torch": version_of(sys.executable, "torch")}
    if "tf" in present:
        versions["tf"] = summary["steps"]["tf"]["version"]
    write = not args.smoke and args.only is None and not skipped
    cells = [fmt(r) for r in summary["ratios"]]
    log = invocation_log("ps", cells) if write else []
    command = "python bench/bench_ps.py" + (" --smoke" if args.smoke else "") + (
        f" --only {args.only}" if args.only else "")
    markdown = report(summary, skipped, command, versions, log)
    if write:
        write_section("ps", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
