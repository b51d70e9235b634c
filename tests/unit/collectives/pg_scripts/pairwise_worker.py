"""Worker script: large all-reduces as pairwise exchanges, and direct in-place ones, on a real 2-task cluster.

The sizes from which frames travel pairwise or direct (and the segment size) are lowered so
that small tensors take those paths. Prints ``RESULT <name> <json>`` lines that test_pairwise.py checks.
"""

from __future__ import annotations

import torch

from distribute.collectives import pairwise, thresholds
from distribute.collectives.failures import CollectiveMismatchError

from _script import emit, join

thresholds.PAIRWISE_MIN_BYTES = 4096
thresholds.SIGNAL_MAX_BYTES = 4096  # lone floating-point tensors in place from 4 KB go pairwise too
thresholds.DIRECT_MIN_BYTES = 1024  # lone integer tensors of 1 to 4 KB summed in place go direct
thresholds.SEGMENT_BYTES = 1000  # several segments per half, and a ragged last one


def sums(group: object, r: int) -> dict:
    """Every way a tensor can enter the exchange; True where the result is exact."""
    checks = {}
    x = torch.arange(3001, dtype=torch.float32) * (r + 1)
    keep = x.clone()
    (total,) = group.all_reduce([x], note="lone")
    checks["lone"] = torch.equal(total, torch.arange(3001, dtype=torch.float32) * 3) and torch.equal(x, keep)
    y = x.clone()
    before = y._version
    (same,) = group.all_reduce([y], note="lone in place", inplace=True)
    checks["in place"] = same is y and torch.equal(y, total)
    checks["in place version"] = y._version > before  # written by the exchange itself: autograd is told
    grid = (torch.arange(4000, dtype=torch.float64).view(40, 100) * (r + 1)).t()
    (summed,) = group.all_reduce([grid], note="non-contiguous")
    checks["non-contiguous"] = torch.equal(summed, (torch.arange(4000, dtype=torch.float64).view(40, 100) * 3).t())
    many = [torch.full((700,), float(r + 1)), torch.full((5, 300), 2.0), torch.arange(2000) * (r + 1)]
    outs = group.all_reduce(many, note="packed", inplace=bool(r % 2 == 0))
    checks["packed"] = [o.sum().item() for o in outs] == [2100.0, 6000.0, 3 * sum(range(2000))]
    want = [torch.full((700,), 3.0), torch.full((5, 300), 4.0), torch.arange(2000) * 3]
    checks["packed values"] = all(torch.equal(o, w) for o, w in zip(outs, want))
    return checks


def mismatches(group: object, r: int) -> list:
    """Workers calling different collectives where a pairwise one is predicted: errors, then recovery."""
    seen = []
    big = torch.ones(5000)
    for _ in range(2):  # learn: big follows "other"
        group.all_reduce([torch.ones(3)], note="other")
        group.all_reduce([big], note="big")
    cases = [[torch.ones(4999)], [torch.ones(3)], [torch.ones(5000, dtype=torch.float64)]]
    for case in cases:
        group.all_reduce([torch.ones(3)], note="other")
        try:
            group.all_reduce([big] if r == 0 else case, note="big")
            seen.append("no error")
        except CollectiveMismatchError as exc:
            seen.append(sorted(exc.calls))
        (after,) = group.all_reduce([big], note="big")  # the group stays usable
        seen.append(after.sum().item())
    return seen


def direct(group: object, r: int) -> dict:
    """In-place sums of a lone medium integer tensor (all-reduced where it is, after a header piece).

    (A floating-point one takes the NaN-signalled plan instead, see nan_worker.py.)
    """
    checks = {}
    y = torch.arange(500, dtype=torch.int64) * (r + 1)
    before = y._version
    (same,) = group.all_reduce([y], note="direct", inplace=True)
    checks["in place"] = same is y and torch.equal(y, torch.arange(500, dtype=torch.int64) * 3)
    checks["version"] = y._version > before  # written by gloo itself: autograd is told
    z = torch.arange(1000, dtype=torch.int32).view(10, 100).t() * (r + 1)  # not contiguous: copied
    (same,) = group.all_reduce([z], note="direct strided", inplace=True)
    checks["strided"] = same is z and torch.equal(z, torch.arange(1000, dtype=torch.int32).view(10, 100).t() * 3)
    return checks


def direct_mismatches(group: object, r: int) -> list:
    """A predicted direct sum met by a different call: errors, the tensor left as it was, recovery."""
    seen = []
    for _ in range(2):  # learn: "direct" follows "other"
        group.all_reduce([torch.ones(3)], note="other")
        group.all_reduce([torch.ones(500, dtype=torch.int64)], note="direct", inplace=True)
    for case in ("shape", "out of place"):
        group.all_reduce([torch.ones(3)], note="other")
        y = torch.arange(500, dtype=torch.int64) + 7
        keep = y.clone()
        try:
            if r == 0:
                group.all_reduce([y], note="direct", inplace=True)
            elif case == "shape":
                group.all_reduce([torch.ones(499, dtype=torch.int64)], note="direct", inplace=True)
            else:
                group.all_reduce([torch.arange(500, dtype=torch.int64)], note="direct")
            seen.append("no error")
        except CollectiveMismatchError as exc:
            seen.append(sorted(exc.calls))
            seen.append("(in place)" in str(exc))
        seen.append(torch.equal(y, keep))  # what worker 0 sent was summed with zeros only
        y = torch.arange(500, dtype=torch.int64)
        (after,) = group.all_reduce([y], note="direct", inplace=True)  # the group stays usable
        seen.append(after.sum().item())
    return seen


def main() -> None:
    group = join()
    r = group.rank
    raw = group.connection.gloo
    source = torch.arange(12345, dtype=torch.float32) + r
    out = torch.empty_like(source)
    for work in pairwise.exchange(raw, source, out, r, torch.empty(12345)):
        work.wait()
    emit("exchange", torch.equal(out, torch.arange(12345, dtype=torch.float32) * 2 + 1))
    for round_ in range(3):  # first a full check, then predicted
        emit(f"sums{round_}", sums(group, r))
        emit(f"direct{round_}", direct(group, r))
    emit("mismatch", mismatches(group, r))
    emit("direct_mismatch", direct_mismatches(group, r))
    group.shutdown()
    emit("done", True)


if __name__ == "__main__":
    main()
