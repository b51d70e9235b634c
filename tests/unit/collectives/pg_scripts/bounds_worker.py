"""Worker script for the rendezvous-bounds tests: times ``connect`` and prints how it ended.

``argv``: the rendezvous timeout (s), and optionally a file to wait for before connecting (so
the process can start, and import torch, while the test prepares the scenario). Prints ``RESULT outcome {"type", "message", "elapsed"}``
(``type`` is ``"ok"`` when the group was built).
"""

from __future__ import annotations

import json
import os
import sys
import time

from distribute.cluster_resolver import TFConfigClusterResolver
from distribute.collectives.connect import connect


def main() -> None:
    resolver = TFConfigClusterResolver()
    while len(sys.argv) > 2 and not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    started = time.monotonic()
    try:
        group = connect(resolver.cluster_spec(), resolver.task_type, resolver.task_id,
                        rendezvous_timeout=float(sys.argv[1]))
        outcome = {"type": "ok", "message": ""}
        group.shutdown()
    except Exception as exc:  # noqa: BLE001 - reported to the test
        outcome = {"type": type(exc).__name__, "message": str(exc)}
    outcome["elapsed"] = time.monotonic() - started
    print(f"RESULT outcome {json.dumps(outcome)}", flush=True)


if __name__ == "__main__":
    main()
