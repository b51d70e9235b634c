"""Worker script for the job-secret tests: joins from TF_CONFIG and all-reduces ``rank + 1``.

``argv``: rendezvous timeout (s), steps, seconds of sleep per step, and the value this
process contributes (default ``rank + 1``; a rogue passes 1000). With ``GO_FILE`` set, it
waits for that file before connecting (it starts, and imports torch, meanwhile). Prints ``RESULT training``
after the first step and ``RESULT sums [...]`` at the end.
"""

from __future__ import annotations

import os
import sys
import time

import torch

from distribute.cluster_resolver import TFConfigClusterResolver
from distribute.collectives.connect import connect

torch.set_num_threads(1)


def main() -> None:
    timeout, steps, pause = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    while os.environ.get("GO_FILE") and not os.path.exists(os.environ["GO_FILE"]):
        time.sleep(0.01)
    resolver = TFConfigClusterResolver()
    group = connect(resolver.cluster_spec(), resolver.task_type, resolver.task_id, rendezvous_timeout=timeout,
                    collective_timeout=20)
    value = float(sys.argv[4]) if len(sys.argv) > 4 else float(group.rank + 1)
    sums = []
    for step in range(steps):
        total, = group.all_reduce([torch.full((2,), value)], note="step")
        sums.append(total.tolist())
        if step == 0:
            print("RESULT training", flush=True)
        time.sleep(pause)
    print(f"RESULT sums {sorted(set(s for pair in sums for s in pair))}", flush=True)
    group.shutdown()


if __name__ == "__main__":
    main()
