"""Per-step overhead of ``strategy.run`` and MLP training throughput, against TensorFlow and torch.

Run from the repository root with the project's environment::

    python bench/bench_core.py

Two children run in every round, in rotating order, each in its own interpreter with 2 intra-op
threads: ``bench/core_children/ours.py`` (distribute, and plain torch as the floor) and
``bench/core_children/tf_core.py`` (TensorFlow 2.21 CPU with two logical CPU devices). Each child
times every case round-robin and prints medians; this script keeps the medians over rounds whose
foreign load stayed under 0.15 cores, computes the ratios of issue 2 section 9 per round, and
writes the section "core" of bench/RESULTS.md. TensorFlow comes from bench/.venv-tf (made on first
use) or from the interpreter named by DISTRIBUTE_BENCH_TF_PYTHON.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from common import fmt, machine_line, median, paired_rounds, table, tf_python, version_of, write_section  # noqa: E402

CHILDREN = BENCH_DIR / "core_children"
MIN_CLEAN = 3

# (label, how the ratio is computed from one round's {"ours": ..., "tf": ...}, goal, goal text)
Ratio = Tuple[str, Callable[[dict], float], Optional[Callable[[float], bool]], str]  # no check: reported only
RATIOS: List[Ratio] = [
    ("Mirrored-2 `run` ÷ TF Mirrored-2 `run` in tf.function",
     lambda r: r["ours"]["run_us"]["mirrored_2"] / r["tf"]["run_us"]["mirrored_2_function"],
     lambda v: v <= 0.15, "≤ 0.15x"),
    ("Mirrored-2 `run` ÷ TF Mirrored-2 `run` eager",
     lambda r: r["ours"]["run_us"]["mirrored_2"] / r["tf"]["run_us"]["mirrored_2"],
     lambda v: v <= 0.03, "≤ 0.03x (spec R1)"),
    ("Mirrored-2 `run` minus floor (2 direct calls), µs per replica",
     lambda r: (r["ours"]["run_us"]["mirrored_2"] - 2 * r["ours"]["run_us"]["torch_direct"]) / 2,
     lambda v: v <= 10, "≤ 10 µs (spec R1)"),
    ("Mirrored-2 `run` + `reduce(SUM)` ÷ TF same in tf.function",
     lambda r: r["ours"]["run_us"]["mirrored_2_reduce"] / r["tf"]["run_us"]["mirrored_2_reduce_function"],
     lambda v: v <= 0.25, "≤ 0.25x (spec R2)"),
    ("default strategy `run` minus direct call, µs",
     lambda r: r["ours"]["run_us"]["default"] - r["ours"]["run_us"]["torch_direct"],
     lambda v: v <= 3, "≤ 3 µs"),
    ("OneDevice `run` minus direct call, µs",
     lambda r: r["ours"]["run_us"]["one_device"] - r["ours"]["run_us"]["torch_direct"],
     lambda v: v <= 3, "≤ 3 µs (spec R3)"),
    ("Mirrored-2 training ÷ plain torch (examples/s)",
     lambda r: r["ours"]["train_eps"]["mirrored_2"] / r["ours"]["train_eps"]["torch_single"],
     lambda v: v >= 0.9, "≥ 0.9x"),
    ("CentralStorage-2 training ÷ plain torch (examples/s)",
     lambda r: r["ours"]["train_eps"]["central_storage_2"] / r["ours"]["train_eps"]["torch_single"],
     lambda v: v >= 0.9, "≥ 0.9x"),
    ("Floor: plain torch, the batch in two 128-row halves, ÷ plain torch (examples/s)",
     lambda r: r["ours"]["train_eps"]["torch_halves"] / r["ours"]["train_eps"]["torch_single"],
     None, "(reported: no strategy code at all)"),
    ("Mirrored-2 training ÷ TF Mirrored-2 in tf.function (examples/s)",
     lambda r: r["ours"]["train_eps"]["mirrored_2"] / r["tf"]["train_eps"]["mirrored_2"],
     None, "(reported)"),
]

RUN_ROWS = [
    ("`x + 1.0`, direct call", "torch_direct", "tf_eager_op"),
    ("`x + 1.0` in tf.function", None, "tf_function_op"),
    ("default strategy `run`", "default", "default"),
    ("OneDeviceStrategy `run`", "one_device", None),
    ("MirroredStrategy(1) `run`, eager", "mirrored_1", "mirrored_1"),
    ("MirroredStrategy(2) `run`, eager", "mirrored_2", "mirrored_2"),
    ("MirroredStrategy(2) `run` in tf.function", None, "mirrored_2_function"),
    ("MirroredStrategy(2) `run` + `reduce(SUM)`", "mirrored_2_reduce", "mirrored_2_reduce_function"),
]
TRAIN_ROWS = [
    ("single process, no strategy", "torch_single", "tf_single"),
    ("plain torch, forward/backward in two 128-row halves (the floor of replicas run in turn)", "torch_halves", None),
    ("MirroredStrategy over 2 logical CPUs", "mirrored_2", "mirrored_2"),
    ("CentralStorageStrategy over 2 logical CPUs", "central_storage_2", None),
]


def run_rounds(rounds: int, max_rounds: int, seconds: float) -> List[dict]:
    """One record per round: both children's outputs and whether the round was clean."""
    tf_py = os.environ.get("DISTRIBUTE_BENCH_TF_PYTHON") or tf_python()
    children = [("ours", sys.executable, CHILDREN / "ours.py"), ("tf", tf_py, CHILDREN / "tf_core.py")]
    return paired_rounds(children, ["--seconds", str(seconds)], rounds, max_rounds, MIN_CLEAN)


def _cell(records: List[dict], side: str, group: str, key: str | None, digits: int) -> str:
    if key is None:
        return "-"
    return fmt(median([rec[side][group][key] for rec in records]), digits)


def report(records: List[dict], versions: Dict[str, str], command: str) -> str:
    """The markdown of the section."""
    clean = [rec for rec in records if rec["clean"]]
    used = clean if len(clean) >= MIN_CLEAN else records
    flagged = "" if len(clean) >= MIN_CLEAN else " (FLAGGED: fewer clean rounds than wanted; medians over all)"
    run_rows = [[label, _cell(used, "ours", "run_us", o, 1), _cell(used, "tf", "run_us", t, 1)]
                for label, o, t in RUN_ROWS]
    train_rows = [[label, _cell(used, "ours", "train_eps", o, 0), _cell(used, "tf", "train_eps", t, 0)]
                  for label, o, t in TRAIN_ROWS]
    ratio_rows = []
    for label, compute, ok, goal in RATIOS:
        value = median([compute(rec) for rec in used])
        verdict = "-" if ok is None else ("met" if ok(value) else "**not met**")
        ratio_rows.append([label, fmt(value), goal, verdict])
    return "\n".join([
        "## core: `strategy.run` overhead and MLP training (issue 2 section 9)",
        "",
        f"Command: `{command}` (repository root, project environment). Run "
        f"{datetime.date.today().isoformat()} on {machine_line()}; torch {versions['torch']}, TensorFlow "
        f"{versions['tf']}; each framework in its own child with 2 intra-op threads; TensorFlow with two "
        f"logical CPU devices. {len(clean)}/{len(records)} rounds clean{flagged}. Each figure is the median "
        "over rounds of the child's median over its round-robin repeats; ratios are medians of per-round ratios.",
        "",
        "`strategy.run(fn, args=(x,))` with `fn = lambda v: v + 1.0` on a scalar tensor, µs per call:",
        "",
        table(["case", "distribute / torch (µs)", "TensorFlow 2.21 (µs)"], run_rows),
        "",
        "MLP 784-512-512-10, global batch 256 (2 x 128 per replica), SGD lr 0.01, softmax cross-entropy, "
        "synthetic in-memory data; TensorFlow steps run `strategy.run` inside `tf.function`; examples/s:",
        "",
        table(["configuration", "distribute / torch", "TensorFlow 2.21"], train_rows),
        "",
        table(["ratio", "value", "goal", "verdict"], ratio_rows),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds to run at least")
    parser.add_argument("--max-rounds", type=int, default=6, help="rounds at most, if some are not clean")
    parser.add_argument("--seconds", type=float, default=0.3, help="seconds per timed repeat of a run case")
    args = parser.parse_args()
    tf_py = os.environ.get("DISTRIBUTE_BENCH_TF_PYTHON") or tf_python()
    versions = {"torch": version_of(sys.executable, "torch"), "tf": version_of(tf_py, "tensorflow")}
    records = run_rounds(args.rounds, args.max_rounds, args.seconds)
    markdown = report(records, versions, "python bench/bench_core.py")
    write_section("core", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
