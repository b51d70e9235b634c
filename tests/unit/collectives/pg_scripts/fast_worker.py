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


def steady(group, rounds: int, dtype: torch.dtype) -> list:
    sums = []
    for _ in range(rounds):
        t = torch.full((4,), group.rank + 1, dtype=dtype)
        out = group.all_reduce([t], note=f"loss {dtype}", inplace=True)
        sums.append([out[0] is t, t.tolist()])
    return sums


def run(group, dtype: torch.dtype, name: str) -> None:
    """The whole sequence for one dtype (float32: NaN-signalled, no header; int64: a header slot)."""
    r = group.rank
    taken.clear()
    held = group.all_reduce([torch.full((4,), 1, dtype=dtype)], note=f"loss {dtype}")[0]  # a new tensor, kept
    emit(f"steady_{name}", steady(group, 6, dtype))
    emit(f"taken_{name}", len(taken))
    emit(f"held_{name}", held.tolist())
    t = torch.full((4,), r + 1, dtype=dtype)
    try:
        if r == 1:
            group.all_reduce([torch.ones(5)], note="other", inplace=True)
        else:
            group.all_reduce([t], note=f"loss {dtype}", inplace=True)
        emit(f"error_{name}", None)
    except CollectiveMismatchError as exc:
        emit(f"error_{name}", str(exc))
    emit(f"untouched_{name}", t.tolist())
    before = len(taken)
    emit(f"again_{name}", steady(group, 4, dtype))
    emit(f"taken_again_{name}", len(taken) - before)


def main() -> None:
    group = join()
    run(group, torch.float32, "float")
    run(group, torch.int64, "int")
    group.shutdown()


if __name__ == "__main__":
    main()
