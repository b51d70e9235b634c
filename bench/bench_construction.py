"""Model construction time in MultiWorkerMirroredStrategy.scope() on 2 worker processes.

Usage: ``python bench/bench_construction.py [--rounds 15] [--layers 24] [--variables 16]``.
Each worker builds, ``--rounds`` times, an MLP of ``--layers`` Linear(256, 256) layers plus
``--variables`` scalar ``distribute.Variable`` objects inside the scope (timed from entering the
scope to leaving it, which includes every broadcast), and prints the median and the spread.
Prints to stdout only; nothing is written to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _child(rounds: int, layers: int, variables: int) -> None:
    import torch

    import distribute
    from distribute.collectives.cross_device_ops import CommunicationOptions
    from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy

    torch.set_num_threads(1)
    strategy = MultiWorkerMirroredStrategy(communication_options=CommunicationOptions(timeout_seconds=60))
    times = []
    for _ in range(rounds + 1):  # the first round warms up
        started = time.perf_counter()
        with strategy.scope():
            torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(layers)])
            for i in range(variables):
                distribute.Variable(torch.rand(()), name=f"v{i}")
        times.append(time.perf_counter() - started)
    print("RESULT " + json.dumps(times[1:]), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--variables", type=int, default=16)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.rounds, args.layers, args.variables)
        return
    from distribute.launch import launch

    argv = [sys.executable, __file__, "--child", "--rounds", str(args.rounds), "--layers", str(args.layers),
            "--variables", str(args.variables)]
    result = launch(argv, workers=2, timeout=600)
    if result.returncode != 0:
        sys.exit(result.output)
    for task, task_result in result.tasks.items():
        line = next(out for out in task_result.output.splitlines() if out.startswith("RESULT "))
        times = [t * 1e3 for t in json.loads(line[7:])]
        print(f"{task}: construction in scope, {args.layers} x Linear(256, 256) + {args.variables} Variables: "
              f"median {statistics.median(times):.1f} ms (min {min(times):.1f}, max {max(times):.1f}; "
              f"{len(times)} rounds)")


if __name__ == "__main__":
    main()
