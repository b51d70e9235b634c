"""Worker script (2 tasks): NaN-signalled in-place sums (nan_signal.py) on a real cluster.

One floating-point tensor summed in place between two processes travels without a header: its
first element carries the signal. Checks the sums for every signalled dtype and shape, tensors
that must be copied (not contiguous, requiring grad) on one worker only, NaN in the data (a
full check, then the sum stands), and mismatches met on a predicted signalled sum (both raise,
the tensor is left as it was bit for bit, the group recovers). Prints ``RESULT`` lines.
"""

from __future__ import annotations

import torch

from distribute.collectives.failures import CollectiveMismatchError

from _script import emit, join

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}
_INT = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t: torch.Tensor) -> list:
    """The tensor's elements as raw integers (tells -0.0 from 0.0 and keeps NaN payloads)."""
    return t.detach().reshape(-1).view(_INT[t.element_size()]).tolist()


def plain(group: object, r: int) -> dict:
    """Sums of every dtype and shape, each three times (planned, then predicted): True where exact."""
    checks = {}
    for name, dtype in DTYPES.items():
        for shape in ((), (1,), (7,), (3, 5)):
            base = (torch.arange(torch.Size(shape).numel(), dtype=torch.float32) + 1).to(dtype).view(shape)
            ok = True
            for _ in range(3):
                t = base * (r + 1) + r  # worker 0: base, worker 1: 2 base + 1
                (out,) = group.all_reduce([t], note=f"{name}{list(shape)}", inplace=True)
                ok = ok and out is t and torch.equal(t, base * 3 + 1)
            checks[f"{name}{list(shape)}"] = ok
    return checks


def copied(group: object, r: int) -> dict:
    """Worker 1 passes a tensor that cannot be summed where it is; worker 0 a plain one."""
    checks = {}
    for _ in range(3):
        base = torch.arange(12, dtype=torch.float32).view(3, 4)
        t = base.t().contiguous() if r == 0 else base.clone().t()  # same shape (4, 3); worker 1's is strided
        (out,) = group.all_reduce([t], note="strided", inplace=True)
        checks.setdefault("strided", True)
        checks["strided"] = checks["strided"] and out is t and torch.equal(t, base.t() * 2)
        w = torch.full((5,), float(r + 1), requires_grad=r == 1)
        (out,) = group.all_reduce([w], note="grad", inplace=True)
        checks.setdefault("grad", True)
        checks["grad"] = checks["grad"] and out is w and w.detach().tolist() == [3.0] * 5
    return checks


def nan_data(group: object, r: int) -> dict:
    """A NaN in the data: first element (a full check, the sum stands) or elsewhere (nothing extra)."""
    for _ in range(3):  # learn: "nan" follows "nan"
        group.all_reduce([torch.ones(6)], note="nan", inplace=True)

    def summed(rank: int, at: int) -> list:
        """The sum when worker ``rank`` has a NaN at ``at`` (-1: nowhere), and the full checks it took."""
        before = group.full_checks
        t = torch.ones(6)
        if r == rank:
            t[at] = float("nan")
        group.all_reduce([t], note="nan", inplace=True)
        return [[str(v) for v in t.tolist()], group.full_checks - before]

    return {"first": summed(1, 0), "elsewhere": summed(0, 3), "after": summed(-1, 0)}


def versions(group: object, r: int) -> list:
    """A tensor autograd saved, then summed in place: backward must refuse it, as after copy_()."""
    seen = []
    w = torch.ones(4, requires_grad=True)
    for _ in range(3):  # planned, then predicted (the shortcut)
        x = torch.ones(4)
        y = (x * w).sum()  # saves x for w's gradient
        before = x._version
        group.all_reduce([x], note="saved", inplace=True)
        try:
            y.backward()
            refused = False
        except RuntimeError as exc:
            refused = "modified by an inplace operation" in str(exc)
        seen.append([x._version > before, refused])
    return seen


def mismatches(group: object, r: int) -> list:
    """Worker 0 runs the predicted signalled sum, worker 1 something else: both raise, worker 0's tensor is kept."""
    seen = []
    for name, dtype in DTYPES.items():
        for first in (-0.0, float("nan"), 2.5):
            for _ in range(2):  # learn: "signalled" follows "other"
                group.all_reduce([torch.ones(3)], note="other")
                group.all_reduce([torch.ones(8, dtype=dtype)], note=f"signalled {name}", inplace=True)
            group.all_reduce([torch.ones(3)], note="other")
            t = torch.arange(8, dtype=torch.float32).to(dtype)
            t[0] = first
            keep = bits(t)
            try:
                if r == 0:
                    group.all_reduce([t], note=f"signalled {name}", inplace=True)
                else:
                    group.all_reduce([torch.ones(9, dtype=dtype)], note=f"signalled {name}", inplace=True)
                seen.append("no error")
            except CollectiveMismatchError as exc:
                seen.append(sorted(exc.calls))
            seen.append(bits(t) == keep)
            (after,) = group.all_reduce([torch.ones(8, dtype=dtype)], note=f"signalled {name}", inplace=True)
            seen.append(after.float().sum().item())  # the group stays usable
    return seen


def main() -> None:
    group = join()
    r = group.rank
    emit("plain", plain(group, r))
    emit("copied", copied(group, r))
    emit("nan_data", nan_data(group, r))
    emit("versions", versions(group, r))
    emit("mismatch", mismatches(group, r))
    group.shutdown()
    emit("done", True)


if __name__ == "__main__":
    main()
