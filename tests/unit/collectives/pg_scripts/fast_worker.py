"""Worker script (2 tasks): steady small in-place sums, as a training loop makes them.

Counts the calls each wire method carried, checks their sums, a result held from an earlier
call, a worker that runs something else while the other runs the predicted sum (both must
raise CollectiveMismatchError, the tensor left as it was), and the recovery. Prints ``RESULT``
lines.
"""

from __future__ import annotations

import torch

from distribute.collectives.failures import CollectiveMismatchError

from _script import emit, join


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
    start = sum(group.wire_counts.values())
    held = group.all_reduce([torch.full((4,), 1, dtype=dtype)], note=f"loss {dtype}")[0]  # a new tensor, kept
    emit(f"steady_{name}", steady(group, 6, dtype))
    emit(f"counts_{name}", group.wire_counts)
    emit(f"taken_{name}", sum(group.wire_counts.values()) - start)
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
    before = sum(group.wire_counts.values())
    emit(f"again_{name}", steady(group, 4, dtype))
    emit(f"taken_again_{name}", sum(group.wire_counts.values()) - before)


def main() -> None:
    group = join()
    run(group, torch.float32, "float")
    run(group, torch.int64, "int")
    group.shutdown()


if __name__ == "__main__":
    main()
