"""Input-pipeline throughput: distribute.data against tf.data and torch's DataLoader.

Run from the repository root with the project's environment::

    python bench/bench_data.py

Each framework runs the same pipelines (bench/data_children/_spec.py) in its own child
interpreter; the children are interleaved in rounds (the order rotates every round), and
every round records the CPU used by processes outside this benchmark (common.ForeignLoad).
The figures are medians over at least five clean rounds (foreign load <= 0.15 cores), or
over all rounds, flagged, when fewer were clean. The result is the section "data" of
bench/RESULTS.md. TensorFlow comes from bench/.venv-tf (made on first use), or from the
interpreter named by the environment variable DISTRIBUTE_BENCH_TF_PYTHON.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "src"))
sys.path.insert(0, str(BENCH_DIR / "data_children"))

from common import (  # noqa: E402
    ForeignLoad, fmt, invocation_log, log_table, machine_line, median, run_child, table, tf_python, write_section,
)
from _spec import DESCRIPTIONS, RECORD_FLOATS, SIZES, TFRECORD_FILES  # noqa: E402

CHILDREN = BENCH_DIR / "data_children"
PIPELINES = ["batch", "shuffle_batch", "cheap_map", "moderate_map", "tfrecord"]
EXTRA = {
    "ours": ["cheap_map_per_element", "moderate_map_per_element", "moderate_map_floor", "tfrecord_read"],
    "tf.data": ["tfrecord_read"],
    "dataloader": ["moderate_map_2_workers", "tfrecord_read"],
}
MIN_CLEAN = 5
NOTES = """Notes:
* With default options a `map` that feeds `batch` over in-memory rows runs once per batch through
  `torch.func.vmap` (after checking that it equals the per-element result), and batching of in-memory
  data is tensor slicing; see docs/data.md.
* The moderate map is bound by its own arithmetic: `torch.sin` on float32 arguments above about 8,000
  (here up to 36,864) takes a slow path, about 8 ns per value on one thread. The pipeline runs at its
  compute floor (the bare `vmap` row); the ratio to tf.data moves with the machine's noise.
* The DataLoader TFRecord reader parses the framing without verifying checksums (as common torch
  TFRecord readers do); distribute.data and tf.data verify both CRC-32C checksums of every record,
  ours with the `crc32c` package's hardware CRC (header CRCs once per distinct length, data CRCs
  mapped over the record bytes). Our block parser with verification takes about 0.6 us per
  256-byte record, a bare framing loop without verification 0.8 us (docs/data.md)."""


def write_tfrecords(directory: str) -> None:
    """The TFRecord files of the read + parse pipeline: random float32 vectors."""
    import numpy as np

    from distribute.data import TFRecordWriter

    rng = np.random.default_rng(0)
    per_file = SIZES["tfrecord"] // TFRECORD_FILES
    for i in range(TFRECORD_FILES):
        with TFRecordWriter(os.path.join(directory, f"part-{i}.tfrecord")) as writer:
            for row in rng.standard_normal((per_file, RECORD_FLOATS), dtype=np.float32):
                writer.write(row.tobytes())


def frameworks() -> Dict[str, tuple]:
    """label -> (python, child script) for each framework."""
    tf_python_path = os.environ.get("DISTRIBUTE_BENCH_TF_PYTHON") or tf_python()
    return {
        "ours": (sys.executable, CHILDREN / "ours.py"),
        "tf.data": (tf_python_path, CHILDREN / "tf_data.py"),
        "dataloader": (sys.executable, CHILDREN / "torch_loader.py"),
    }


def run_rounds(data_dir: str, rounds: int, max_rounds: int, pipelines: List[str]) -> Dict[str, List[dict]]:
    """Runs the children round by round; returns, per framework, one record per round.

    The extra rows are measured only when ``pipelines`` is the whole of PIPELINES.
    """
    runs: Dict[str, List[dict]] = {label: [] for label in frameworks()}
    children = list(frameworks().items())
    for r in range(max_rounds):
        clean = min(sum(x["clean"] for x in v) for v in runs.values())
        if r >= rounds and clean >= MIN_CLEAN:
            break
        order = children[r % len(children):] + children[:r % len(children)]
        for label, (python, script) in order:
            names = pipelines + (EXTRA.get(label, []) if pipelines == PIPELINES else [])
            with ForeignLoad() as load:
                rates = run_child(python, script, ["--pipelines", ",".join(names), "--data-dir", data_dir])
            runs[label].append({"rates": rates, "foreign": load.cores, "clean": load.clean})
            print(f"round {r + 1} {label}: foreign {load.cores:.2f} cores; "
                  + ", ".join(f"{k} {v:,.0f}" for k, v in rates.items()), flush=True)
    return runs


def medians(runs: Dict[str, List[dict]]) -> Dict[str, dict]:
    """Per framework: median elements/s per pipeline over clean rounds, and the counts."""
    out = {}
    for label, records in runs.items():
        clean = [r for r in records if r["clean"]]
        used = clean if len(clean) >= MIN_CLEAN else records
        names = used[0]["rates"].keys()
        out[label] = {
            "rates": {n: median([r["rates"][n] for r in used]) for n in names},
            "clean": len(clean), "total": len(records), "flagged": len(clean) < MIN_CLEAN,
            "foreign": median([r["foreign"] for r in records]),
        }
    return out


def paired_ratios(runs: Dict[str, List[dict]], other: str) -> Dict[str, float]:
    """Per pipeline, the median over rounds of ours / other measured in the same round.

    Pairing by round cancels most of the slow drifts of a shared machine; rounds where
    either child saw foreign load are left out when at least MIN_CLEAN pairs remain.
    """
    pairs = list(zip(runs["ours"], runs[other]))
    clean = [p for p in pairs if p[0]["clean"] and p[1]["clean"]]
    used = clean if len(clean) >= MIN_CLEAN else pairs
    names = [n for n in PIPELINES + ["tfrecord_read"] if n in used[0][1]["rates"] and n in used[0][0]["rates"]]
    return {n: median([a["rates"][n] / b["rates"][n] for a, b in used]) for n in names}


def _version(python: str, module: str) -> str:
    code = f"import {module}; print({module}.__version__)"
    result = subprocess.run([python, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return result.stdout.strip().splitlines()[-1] if result.returncode == 0 else "?"


def _verdict(to_tf: float, to_dl: float) -> str:
    ok_tf, ok_dl = to_tf >= 1.5, to_dl >= 1.0
    if ok_tf and ok_dl:
        return "met"
    missed = ([] if ok_tf else ["1.5x tf.data"]) + ([] if ok_dl else ["DataLoader"])
    return "**not met** (" + ", ".join(missed) + ")"


def report(result: Dict[str, dict], ratios: Dict[str, Dict[str, float]], versions: Dict[str, str],
           log: List[str]) -> str:
    """The markdown of the section."""
    ours, tf, dl = (result[k]["rates"] for k in ("ours", "tf.data", "dataloader"))
    to_tf, to_dl = ratios["tf.data"], ratios["dataloader"]
    rows = []
    for name in PIPELINES:
        rows.append([DESCRIPTIONS[name], fmt(ours[name], 0), fmt(tf[name], 0), fmt(dl[name], 0),
                     fmt(to_tf[name]) + "x", fmt(to_dl[name]) + "x", _verdict(to_tf[name], to_dl[name])])
    extra = [
        ["cheap map, vectorization off (one call per element)", fmt(ours["cheap_map_per_element"], 0),
         fmt(tf["cheap_map"], 0), fmt(dl["cheap_map"], 0),
         fmt(ours["cheap_map_per_element"] / tf["cheap_map"]) + "x",
         fmt(ours["cheap_map_per_element"] / dl["cheap_map"]) + "x"],
        ["moderate map, vectorization off (threads when they pay)", fmt(ours["moderate_map_per_element"], 0),
         fmt(tf["moderate_map"], 0), fmt(dl["moderate_map"], 0),
         fmt(ours["moderate_map_per_element"] / tf["moderate_map"]) + "x",
         fmt(ours["moderate_map_per_element"] / dl["moderate_map"]) + "x"],
        ["moderate map, DataLoader with num_workers=2", "-", "-", fmt(dl["moderate_map_2_workers"], 0), "-",
         fmt(ours["moderate_map"] / dl["moderate_map_2_workers"]) + "x (default ours)"],
        ["TFRecord read (+ verify, ours and tf.data) + batch(256), no decode: " + DESCRIPTIONS["tfrecord_read"],
         fmt(ours["tfrecord_read"], 0), fmt(tf["tfrecord_read"], 0), fmt(dl["tfrecord_read"], 0),
         fmt(to_tf["tfrecord_read"]) + "x *", fmt(to_dl["tfrecord_read"]) + "x *"],
        ["moderate map compute floor: bare `torch.func.vmap(f)` on index batches, no pipeline",
         fmt(ours["moderate_map_floor"], 0), fmt(tf["moderate_map"], 0), "-",
         fmt(ours["moderate_map_floor"] / tf["moderate_map"]) + "x", "-"],
    ]
    counts = ", ".join(f"{k}: {v['clean']}/{v['total']} clean rounds"
                       + (" (FLAGGED: fewer than 5 clean, median over all)" if v["flagged"] else "")
                       for k, v in result.items())
    headers = ["pipeline", "distribute.data el/s", "tf.data el/s", "DataLoader el/s", "÷ tf.data *",
               "÷ DataLoader *", "goal (≥1.5x tf.data and ≥ DataLoader)"]
    extra_headers = ["pipeline", "distribute.data el/s", "tf.data el/s", "DataLoader el/s", "÷ tf.data",
                     "÷ DataLoader"]
    return "\n".join([
        "## data: distribute.data against tf.data and DataLoader",
        "",
        f"Command: `python bench/bench_data.py` (repository root, project environment). "
        f"Run {datetime.date.today().isoformat()} on {machine_line()}; torch {versions['torch']}, "
        f"TensorFlow {versions['tf']}; 2 intra-op threads per child; batch 256.",
        f"Medians of elements/s over rounds of one child per framework (order rotated each round); "
        f"{counts}. * Ratios are medians of the per-round ratios (each round's children ran back to back).",
        "",
        table(headers, rows),
        "",
        "For transparency, the per-element paths "
        "(`Options().experimental_optimization.map_vectorization = False`) and a compute floor "
        "(ratios of the medians):",
        "",
        table(extra_headers, extra),
        "",
        "Paired ratios of this and earlier invocations (newest first; a goal counts as met when it is met "
        "in at least 2 of 3 invocations, spec/performance.md section 3):",
        "",
        log_table([f"{n} (÷TF / ÷DL)" for n in PIPELINES], log),
        "",
        NOTES,
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds to run at least")
    parser.add_argument("--max-rounds", type=int, default=8, help="rounds at most, if some are not clean")
    parser.add_argument("--pipelines", default=",".join(PIPELINES),
                        help="comma-separated subset of PIPELINES; a subset prints its ratios and "
                             "leaves bench/RESULTS.md alone")
    args = parser.parse_args()
    pipelines = [n for n in PIPELINES + ["tfrecord_read"] if n in args.pipelines.split(",")]
    python_tf = frameworks()["tf.data"][0]
    versions = {"torch": _version(sys.executable, "torch"), "tf": _version(python_tf, "tensorflow")}
    with tempfile.TemporaryDirectory(prefix="bench_data_") as data_dir:
        write_tfrecords(data_dir)
        runs = run_rounds(data_dir, args.rounds, args.max_rounds, pipelines)
    ratios = {other: paired_ratios(runs, other) for other in ("tf.data", "dataloader")}
    if pipelines != PIPELINES:
        for name in pipelines:
            print(f"{name}: paired ratio ours / tf.data {fmt(ratios['tf.data'][name])}x, "
                  f"ours / DataLoader {fmt(ratios['dataloader'][name])}x")
        return
    cells = [f"{fmt(ratios['tf.data'][n])} / {fmt(ratios['dataloader'][n])}" for n in PIPELINES]
    markdown = report(medians(runs), ratios, versions, invocation_log("data", cells))
    write_section("data", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
