"""Child (one per worker): each fast path of ``ProcessGroup.all_reduce`` against the general path.

``pairs.py FULL|SMOKE`` prints, for each comparison and size, the per-pair ratios
(fast path's seconds per call / general path's), timed in alternating turns in the same
processes on the same group (see ``_peer.paired``): every pair shares the load of its moment.
"""

from __future__ import annotations

import json
import sys
from typing import Callable, Dict, List, Tuple

import torch

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/multiworker_children")
from _peer import paired, reps_for  # noqa: E402

from distribute.cluster_resolver import TFConfigClusterResolver  # noqa: E402
from distribute.collectives.connect import connect  # noqa: E402

torch.set_num_threads(1)
MB = 1 << 20
KB = 1 << 10
# comparison: (the fast path's methods, the general variant's, dtype, in place, sizes)
COMPARISONS: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...], torch.dtype, bool, List[int]]] = {
    "nan_signal": (("nan_signal",), (), torch.float32, True, [4 * KB, 64 * KB, 1 * MB, 8 * MB]),
    "direct": (("direct",), (), torch.int64, True, [4 * MB, 8 * MB]),
    "pairwise": (("pairwise",), (), torch.float32, False, [16 * MB, 64 * MB]),
    "pairwise_in_place": (("pairwise",), (), torch.float32, True, [64 * MB]),
}


def call_for(group, methods: Tuple[str, ...], dtype: torch.dtype, inplace: bool, nbytes: int,
             label: str) -> Callable[[], None]:
    """An all-reduce with only ``methods`` on (plans are keyed by the option: each variant is
    planned by its first call, then the two alternate without planning again)."""
    numel = nbytes // torch.empty((), dtype=dtype).element_size()
    source = torch.ones(numel, dtype=dtype)
    note = f"{label} {nbytes}"

    def call() -> None:
        group.use_fast_paths(methods)  # both workers, at the same point; both variants pay it
        group.all_reduce([source], note=note, inplace=inplace)

    call()
    return call


def main() -> None:
    resolver = TFConfigClusterResolver()
    group = connect(resolver.cluster_spec(), resolver.task_type, resolver.task_id, rendezvous_timeout=60,
                    collective_timeout=120)
    smoke = sys.argv[1] == "smoke"
    out: Dict[str, Dict[str, List[float]]] = {}
    for name, (fast, general, dtype, inplace, sizes) in COMPARISONS.items():
        for nbytes in sizes[:1] if smoke else sizes:
            calls = {"fast": call_for(group, fast, dtype, inplace, nbytes, f"{name} fast"),
                     "general": call_for(group, general, dtype, inplace, nbytes, f"{name} general")}
            pairs = paired(calls, "general", reps_for(nbytes, smoke), 3 if smoke else 12)
            out.setdefault(name, {})[str(nbytes)] = [f / g for f, g in pairs["fast"]]
    if group.rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    group.shutdown()


if __name__ == "__main__":
    main()
