"""NaN-signalled in-place sums (nan_signal.py): the bit helpers here, the protocol on 2 real processes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from distribute.collectives.nan_signal import BITS, first_bits, is_nan
from distribute.collectives.nan_signal import SIGNAL_DTYPES
from ._two_workers import BOTH_WAYS, run_two_workers

SCRIPT = Path(__file__).resolve().parent / "pg_scripts" / "nan_worker.py"


def test_every_signalled_dtype_has_its_bits() -> None:
    assert set(BITS) == set(SIGNAL_DTYPES)


@pytest.mark.parametrize("dtype", SIGNAL_DTYPES)
def test_first_bits_and_is_nan_agree_with_torch(dtype: torch.dtype) -> None:
    values = [float("nan"), -float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -2.5, 1e-3]
    for value in values:
        t = torch.tensor([value, 7.0], dtype=dtype)
        got = first_bits(t)
        want = t[:1].view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]).item()
        assert got == want % (1 << (8 * t.element_size())), (dtype, value)
        assert is_nan(dtype, got) == bool(torch.isnan(t[0])), (dtype, value)
    # a NaN with any payload, and a 0-d tensor, a view with an offset
    assert is_nan(dtype, BITS[dtype][1] | 1) and not is_nan(dtype, BITS[dtype][1])
    assert first_bits(torch.tensor(3.0, dtype=dtype)) == first_bits(torch.tensor([3.0], dtype=dtype))
    assert first_bits(torch.tensor([1.0, 3.0], dtype=dtype)[1:]) == first_bits(torch.tensor([3.0], dtype=dtype))


@pytest.mark.multiprocess
@pytest.mark.timeout(90)
@BOTH_WAYS
def test_signalled_sums_on_two_processes(fast_paths: bool) -> None:
    found = run_two_workers(SCRIPT, fast_paths=fast_paths)
    both = ["worker:0", "worker:1"]
    for task in both:
        mine = found[task]
        assert all(mine["plain"].values()) and len(mine["plain"]) == 16, mine["plain"]
        assert mine["copied"] == {"strided": True, "grad": True}
        nan = mine["nan_data"]
        # a NaN first element: one full check when it carries the signal, and the sum stands
        assert nan["first"] == [["nan"] + ["2.0"] * 5, 1 if fast_paths else 0], nan
        # a NaN elsewhere costs nothing; the prediction goes on
        assert nan["elsewhere"] == [["2.0"] * 3 + ["nan"] + ["2.0"] * 2, 0], nan
        assert nan["after"] == [["2.0"] * 6, 0], nan
        # summed where it is, behind torch's back: autograd still sees the change
        assert mine["versions"] == [[True, True]] * 3, mine["versions"]
        # 4 dtypes x 3 first elements: both raise, worker 0's tensor is kept bit for bit, then recovery
        assert mine["mismatch"] == [both, True, 16.0] * 12, mine["mismatch"]
        assert mine["done"] is True
