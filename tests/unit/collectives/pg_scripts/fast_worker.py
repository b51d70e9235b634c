"""Worker script (2 tasks): the shortcut for steady small in-place sums (fast_reduce.py).

Counts the calls that took the shortcut, checks their sums, a result held from an earlier
call, a worker that runs something else while the other takes the shortcut (both must raise
CollectiveMismatchError, the tensor left as it was), and the recovery. Prints ``RESULT`` lines.
"""

from __future__ import annotations

import torch

from distribute.collectives import fast_reduce
from distribute.collectives.failures import CollectiveMismatchError

from _script import emit, join

taken = []
_sum = fast_reduce._sum


def counted(*args):  # the real shortcut, counted
    taken.append(1)
    return _sum(*args)


fast_reduce._sum = counted


def steady(group, rounds: int) -> list:
    sums = []
    for _ in range(rounds):
        t = torch.full((4,), float(group.rank + 1))
        out = group.all_reduce([t], note="loss", inplace=True)
        sums.append([out[0] is t, t.tolist()])
    return sums


def main() -> None:
    group = join()
    r = group.rank
    held = group.all_reduce([torch.full((4,), 1.0)], note="loss")[0]  # a new tensor, kept
    emit("steady", steady(group, 6))
    emit("taken", len(taken))
    emit("held", held.tolist())
    t = torch.full((4,), float(r + 1))
    try:
        if r == 1:
            group.all_reduce([torch.ones(5)], note="other", inplace=True)
        else:
            group.all_reduce([t], note="loss", inplace=True)
        emit("error", None)
    except CollectiveMismatchError as exc:
        emit("error", str(exc))
    emit("untouched", t.tolist())
    before = len(taken)
    emit("again", steady(group, 4))
    emit("taken_again", len(taken) - before)
    group.shutdown()


if __name__ == "__main__":
    main()
