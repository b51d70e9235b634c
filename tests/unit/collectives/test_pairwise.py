"""Pairwise exchanges (pairwise.py): large all-reduces between two processes, on real processes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from distribute.collectives.pairwise import exchange
from ._two_workers import BOTH_WAYS, run_two_workers

SCRIPT = Path(__file__).resolve().parent / "pg_scripts" / "pairwise_worker.py"


def test_exchange_checks_its_buffers() -> None:
    with pytest.raises(ValueError, match="one size and dtype"):
        exchange(None, torch.ones(4), torch.ones(5), 0, torch.ones(4))
    with pytest.raises(ValueError, match="rank of 0 or 1"):
        exchange(None, torch.ones(4), torch.ones(4), 2, torch.ones(4))


@pytest.mark.multiprocess
@pytest.mark.timeout(90)
@BOTH_WAYS
def test_pairwise_all_reduce_on_two_processes(fast_paths: bool) -> None:
    found = run_two_workers(SCRIPT, fast_paths=fast_paths)
    for task in ("worker:0", "worker:1"):
        assert found[task]["exchange"] is True
        for round_ in range(3):
            assert all(found[task][f"sums{round_}"].values()), (task, round_, found[task][f"sums{round_}"])
            assert all(found[task][f"direct{round_}"].values()), (task, round_, found[task][f"direct{round_}"])
        both = ["worker:0", "worker:1"]
        # every mismatch raises on both workers, names both, and leaves the group usable
        assert found[task]["mismatch"] == [both, 10000.0] * 3, found[task]["mismatch"]
        # a predicted direct sum that meets another call leaves the tensor as it was, then recovers
        total = 2 * sum(range(500))
        # (on the general path an in-place and an out-of-place sum send the same messages: they meet)
        other = [both, True, True, total] if fast_paths else ["no error", task == "worker:1", total]
        assert found[task]["direct_mismatch"] == [both, True, True, total] + other, found[task]["direct_mismatch"]
        assert found[task]["done"] is True
