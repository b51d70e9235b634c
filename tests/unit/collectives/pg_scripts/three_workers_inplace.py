"""Worker script (3 tasks): a predicted in-place sum that one worker does not make.

Workers 0 and 2 run the predicted packed sum in place while worker 1 calls something else.
Their tensors must come out as they went in (nothing summed before the mismatch is known),
and a retry must give the right sums. Prints ``RESULT <name> <json>`` lines.
"""

from __future__ import annotations

import torch

from distribute.collectives.failures import CollectiveMismatchError

from _script import emit, join


def main() -> None:
    group = join()
    r = group.rank
    for _ in range(2):  # learn: the packed in-place sum follows "other"
        group.all_reduce([torch.ones(3)], note="other")
        group.all_reduce([torch.ones(3), torch.ones(5, dtype=torch.int64)], note="packed", inplace=True)
    group.all_reduce([torch.ones(3)], note="other")
    a, b = torch.full((3,), float(r + 1)), torch.full((5,), r + 1, dtype=torch.int64)
    try:
        if r == 1:
            group.all_reduce([torch.ones(4)], note="packed", inplace=True)
        else:
            group.all_reduce([a, b], note="packed", inplace=True)
        emit("error", False)
    except CollectiveMismatchError:
        emit("error", True)
    emit("untouched", [a.tolist(), b.tolist()])
    a, b = torch.full((3,), float(r + 1)), torch.full((5,), r + 1, dtype=torch.int64)
    group.all_reduce([a, b], note="packed", inplace=True)
    emit("retry", [a.tolist(), b.tolist()])
    group.shutdown()


if __name__ == "__main__":
    main()
