"""Worker script: the ProcessGroup collectives on a real 2-task cluster (TF_CONFIG from the launcher).

Prints ``RESULT <name> <json>`` lines that test_process_group.py compares between the tasks.
"""

from __future__ import annotations

import torch

from _script import emit, join


def main() -> None:
    group = join()
    r = group.rank
    mixed = [torch.full((2, 3), float(r + 1)), torch.arange(4) * (r + 1), torch.tensor([r == 1]),
             torch.ones(3, dtype=torch.float16) * (r + 1), torch.tensor(2.5 * (r + 1), dtype=torch.float64)]
    sums = group.all_reduce(mixed, note="mixed dtypes")
    emit("mixed", [t.tolist() for t in sums] + [[str(t.dtype) for t in sums]])

    packed = [torch.full((100,), float(r + 1)) for _ in range(5)]
    outs = group.all_reduce(packed, note="packs", bytes_per_pack=800)
    emit("packs", [float(o.sum()) for o in outs])

    grads = [torch.full((3,), float(r + 1)), torch.full((2, 2), 10.0 * (r + 1))]
    same = group.all_reduce(grads, note="in place", inplace=True)
    emit("inplace", {"values": [g.tolist() for g in grads], "same_objects": all(a is b for a, b in zip(same, grads))})

    part = torch.arange(2 * (r + 1), dtype=torch.float32).reshape(2, r + 1) + 100 * r
    gathered, offset = group.all_gather(part, 1, note="axis 1", with_offset=True)
    emit("gather", {"value": gathered.tolist(), "offset": offset})

    value = torch.full((3,), float(r))
    group.broadcast([value, torch.zeros(2, dtype=torch.int64) + r], src=1, note="from worker 1")
    emit("broadcast", value.tolist())
    emit("any", [group.any_true(r == 1), group.any_true(False)])

    before = group.full_checks
    for _ in range(10):  # a steady loop of two alternating collectives is predicted after one round
        group.all_reduce([torch.ones(1000)], note="A")
        group.all_reduce([torch.ones(7, dtype=torch.int64)], note="B")
    steady = group.full_checks - before
    held = group.all_reduce([torch.ones(4)], note="held")[0]
    again = group.all_reduce([torch.ones(4) * 3], note="held")[0]
    emit("prediction", {"full_checks": steady, "sequence": group.sequence, "held": held.tolist(),
                        "again": again.tolist(), "distinct": held.data_ptr() != again.data_ptr()})
    group.shutdown()
    group.shutdown()
    emit("done", True)


if __name__ == "__main__":
    main()
