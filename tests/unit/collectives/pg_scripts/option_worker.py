"""Worker script (2 tasks): workers that disagree on the fast-path option.

Worker 0 turns the fast paths on, worker 1 off: every collective must raise
CollectiveMismatchError on both (no data moved), whether it is an all-reduce whose messages
would be the same or not, a gather or a broadcast. Once worker 1 turns them on too, the
collectives work. Prints ``RESULT`` lines.
"""

from __future__ import annotations

import torch

from distribute.cluster_resolver import TFConfigClusterResolver
from distribute.collectives.connect import connect
from distribute.collectives.failures import CollectiveMismatchError

from _script import emit


def attempt(call) -> object:
    try:
        call()
        return "no error"
    except CollectiveMismatchError as exc:
        return [sorted(exc.calls), "[fast paths off]" in str(exc)]


def main() -> None:
    resolver = TFConfigClusterResolver()
    group = connect(resolver.cluster_spec(), resolver.task_type, resolver.task_id, rendezvous_timeout=20,
                    collective_timeout=20, fast_paths=resolver.task_id == 0)
    r = group.rank
    t = torch.full((6,), float(r + 1))
    keep = t.clone()
    seen = {
        "out of place": attempt(lambda: group.all_reduce([torch.ones(4)], note="same messages")),
        "in place": attempt(lambda: group.all_reduce([t], note="signalled or not", inplace=True)),
        "gather": attempt(lambda: group.all_gather(torch.ones(2, 2), 0)),
        "broadcast": attempt(lambda: group.broadcast([torch.ones(3)])),
    }
    emit("mismatch", seen)
    emit("untouched", torch.equal(t, keep))
    group.use_fast_paths(True)
    (total,) = group.all_reduce([t], note="signalled or not", inplace=True)
    emit("agreed", total.tolist())
    group.shutdown()


if __name__ == "__main__":
    main()
