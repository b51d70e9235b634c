"""Runs every benchmark in bench/ one after another (``make bench``); each writes its own section.

Usage: ``python bench/run_all.py [name ...]`` where a name is a script's stem without ``bench_``
(e.g. ``core``, ``data``); no name runs them all. Stops at the first benchmark that fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def main(argv: list) -> int:
    scripts = sorted(BENCH_DIR.glob("bench_*.py"))
    wanted = set(argv)
    unknown = wanted - {s.stem[len("bench_"):] for s in scripts}
    if unknown:
        print(f"unknown benchmark(s) {sorted(unknown)}; available: "
              f"{[s.stem[len('bench_'):] for s in scripts]}", file=sys.stderr)
        return 2
    for script in scripts:
        if wanted and script.stem[len("bench_"):] not in wanted:
            continue
        print(f"== {script.name}", flush=True)
        status = subprocess.call([sys.executable, str(script)])
        if status != 0:
            print(f"{script.name} failed with exit status {status}", file=sys.stderr)
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
