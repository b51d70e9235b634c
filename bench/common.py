"""Shared helpers for the benchmarks: peer environments, child runs, load checks, results.

Every benchmark runs `distribute` and its peers (TensorFlow CPU, plain PyTorch, DDP,
DataLoader) in separate child interpreters within one invocation, interleaved in rounds,
and reports medians of clean repeats and the ratio to the peer. TensorFlow is installed on
first use into ``bench/.venv-tf`` (never into the project's environment).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS_MD = BENCH_DIR / "RESULTS.md"
TF_VENV = BENCH_DIR / ".venv-tf"
TF_PIN = "tensorflow-cpu==2.21.0"
FOREIGN_LIMIT = 0.15  # cores used by other processes above which a repeat is not clean


def tf_python() -> str:
    """Returns the interpreter of a virtual environment holding TensorFlow CPU, making it once."""
    python = TF_VENV / "bin" / "python"
    stamp = TF_VENV / ".installed"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", str(TF_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", TF_PIN, "numpy"],
            check=True,
        )
        stamp.touch()
    return str(python)


def child_env(threads: int = 2) -> Dict[str, str]:
    """Environment for a child: the project's sources importable, quiet TF, fixed threads."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(BENCH_DIR), env.get("PYTHONPATH", "")])
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_child(python: str, script: Path, args: Sequence[str] = (), threads: int = 2,
              timeout: float = 600) -> Any:
    """Runs ``python script args`` and returns the JSON object printed on its last line."""
    proc = subprocess.run(
        [python, str(script), *args], capture_output=True, text=True, env=child_env(threads),
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{script.name} {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return json.loads(lines[-1])


def _cpu_jiffies() -> int:
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    return sum(int(x) for x in fields[:3]) + int(fields[5]) + int(fields[6])  # user nice system irq softirq


def _own_jiffies() -> int:
    total = 0
    own = {os.getpid()}
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            stat = (pid_dir / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        ppid, pgrp = int(fields[1]), int(fields[2])
        if int(pid_dir.name) in own or pgrp == os.getpgrp() or ppid in own:
            total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return total


class ForeignLoad:
    """Measures the cores used by processes outside this process group during a block."""

    def __enter__(self) -> "ForeignLoad":
        self._t, self._all, self._own = time.monotonic(), _cpu_jiffies(), _own_jiffies()
        return self

    def __exit__(self, *exc: Any) -> None:
        hz = os.sysconf("SC_CLK_TCK")
        elapsed = max(time.monotonic() - self._t, 1e-9)
        foreign = (_cpu_jiffies() - self._all) - (_own_jiffies() - self._own)
        self.cores = max(foreign, 0) / hz / elapsed

    @property
    def clean(self) -> bool:
        return self.cores <= FOREIGN_LIMIT


def median(values: Sequence[float]) -> float:
    """The median, or NaN for no values."""
    return statistics.median(values) if values else float("nan")


def time_per_call(fn, min_seconds: float = 0.3, inner: int = 100) -> float:
    """Seconds per call of ``fn``, over at least ``min_seconds``."""
    for _ in range(max(inner // 10, 1)):
        fn()
    calls, start = 0, time.perf_counter()
    while True:
        for _ in range(inner):
            fn()
        calls += inner
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / calls


def write_section(name: str, markdown: str) -> None:
    """Replaces (or appends) the section ``name`` of bench/RESULTS.md."""
    text = RESULTS_MD.read_text() if RESULTS_MD.exists() else "# Benchmark results\n"
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{begin}\n{markdown.rstrip()}\n{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    RESULTS_MD.write_text(text)


LOG_MARK = "| invocation |"


def section_text(name: str) -> str:
    """The current text of section ``name`` of bench/RESULTS.md ("" if there is none)."""
    text = RESULTS_MD.read_text() if RESULTS_MD.exists() else ""
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if begin not in text or end not in text:
        return ""
    return text.split(begin, 1)[1].split(end, 1)[0]


def invocation_log(name: str, cells: List[str], keep: int = 3) -> List[str]:
    """This invocation's line of ratios (``cells``) plus the newest ``keep - 1`` lines of the
    invocation table already in section ``name``: a goal counts as met when it is met in at
    least 2 of 3 invocations (spec/performance.md section 3)."""
    old: List[str] = []
    text = section_text(name)
    if LOG_MARK in text:
        block = text.split(LOG_MARK, 1)[1].split("\n")[2:]
        old = [line for line in block if line.startswith("| 20")][: keep - 1]
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    return ["| " + " | ".join([stamp] + cells) + " |"] + old


def log_table(columns: List[str], lines: List[str]) -> str:
    """The invocation table: a column per ratio, newest invocation first."""
    header = LOG_MARK + " " + " | ".join(columns) + " |"
    return "\n".join([header, "|" + "---|" * (len(columns) + 1)] + lines)


def machine_line() -> str:
    """One line naming the machine, for the results file."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {sys.version.split()[0]}"


def table(headers: List[str], rows: List[List[Any]]) -> str:
    """A markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def fmt(value: Optional[float], digits: int = 2) -> str:
    """Formats a float for a table; '-' for None or NaN."""
    if value is None or value != value:
        return "-"
    return f"{value:,.{digits}f}"


def version_of(python: str, module: str) -> str:
    """``module.__version__`` as seen by the interpreter ``python`` ('?' if it cannot import it)."""
    code = f"import {module}; print({module}.__version__)"
    result = subprocess.run([python, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return result.stdout.strip().splitlines()[-1] if result.returncode == 0 else "?"


def paired_rounds(children: Sequence[tuple], args: Sequence[str], rounds: int, max_rounds: int,
                  min_clean: int) -> List[dict]:
    """Runs ``children`` ((label, python, script[, extra_args]), ...) once per round, rotating their order.

    Each child gets ``args`` and then its own ``extra_args`` (later flags win with argparse).

    Returns one record per round: each child's JSON output under its label, and ``clean``
    (no child saw more than FOREIGN_LIMIT foreign cores). Runs at least ``rounds`` rounds and
    more, up to ``max_rounds``, until ``min_clean`` rounds were clean.
    """
    records: List[dict] = []
    children = list(children)
    for r in range(max_rounds):
        if r >= rounds and sum(rec["clean"] for rec in records) >= min_clean:
            break
        record: dict = {"clean": True}
        shift = r % len(children)
        for label, python, script, *extra in children[shift:] + children[:shift]:
            with ForeignLoad() as load:
                record[label] = run_child(python, script, list(args) + (list(extra[0]) if extra else []))
            record["clean"] = record["clean"] and load.clean
            print(f"round {r + 1} {label}: foreign {load.cores:.2f} cores", flush=True)
        records.append(record)
    return records
