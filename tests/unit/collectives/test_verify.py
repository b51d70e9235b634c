"""Fingerprints and the agreement protocol of verify.py.

The Verifier's exchange is a plain all-gather; here two Verifiers run in two threads over an
in-memory all-gather (a barrier), which is all the protocol needs from the transport.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, List

import pytest
import torch

from distribute.collectives.failures import CollectiveMismatchError
from distribute.collectives.verify import Verifier, describe_tensors, make_fingerprint, mismatch_error
from distribute.errors import CollectiveError

F32 = torch.float32


def test_fingerprint_is_deterministic_and_sensitive() -> None:
    base = make_fingerprint("all_reduce", "gradients", [((2, 3), F32)], 0)
    assert base == make_fingerprint("all_reduce", "gradients", [(torch.Size([2, 3]), F32)], 0)
    others = [make_fingerprint("all_reduce", "loss", [((2, 3), F32)], 0),
              make_fingerprint("all_reduce", "gradients", [((3, 2), F32)], 0),
              make_fingerprint("all_reduce", "gradients", [((2, 3), torch.float64)], 0),
              make_fingerprint("broadcast", "gradients", [((2, 3), F32)], 0, with_frames=False),
              make_fingerprint("all_reduce", "gradients", [((2, 3), F32), ((1,), F32)], 0)]
    assert len({base.digest} | {fp.digest for fp in others}) == 6
    assert 0 <= base.digest < 2 ** 63  # fits an int64 record


def test_pack_size_changes_the_plan_and_the_digest() -> None:
    metas = [((100,), F32)] * 4
    one = make_fingerprint("all_reduce", "g", metas, 0)
    packs = make_fingerprint("all_reduce", "g", metas, 800)
    assert [f.numel for f in one.frames] == [400]
    assert [f.numel for f in packs.frames] == [200, 200]
    assert one.digest != packs.digest
    assert make_fingerprint("all_gather", "g", metas, 0, with_frames=False).frames == ()


def test_descriptions() -> None:
    assert describe_tensors([((2,), F32)]) == "1 tensor float32[2]"
    many = describe_tensors([((i,), F32) for i in range(8)])
    assert many.startswith("8 tensors float32[0], float32[1]") and many.endswith("... (2 more)")
    assert make_fingerprint("all_reduce", "loss", [((), torch.int64)], 0).describe == "loss: 1 tensor int64[]"


class _InMemoryAllGather:
    """An all-gather between threads: each rank contributes a tensor and gets everyone's."""

    def __init__(self, size: int) -> None:
        self._barrier = threading.Barrier(size)
        self._slots: List[Any] = [None] * size

    def for_rank(self, rank: int) -> Callable[[torch.Tensor], List[torch.Tensor]]:
        def gather(tensor: torch.Tensor) -> List[torch.Tensor]:
            self._slots[rank] = tensor.clone()
            self._barrier.wait(timeout=10)
            out = list(self._slots)
            self._barrier.wait(timeout=10)
            return out

        return gather


def _run_pair(body: Callable[[Verifier, int], Any]) -> List[Any]:
    exchange = _InMemoryAllGather(2)
    tasks = ("worker:0", "worker:1")
    verifiers = [Verifier(exchange.for_rank(r), tasks, r) for r in range(2)]
    results: List[Any] = [None, None]

    def run(rank: int) -> None:
        try:
            results[rank] = body(verifiers[rank], rank)
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            results[rank] = exc

    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    return results


def test_full_check_agrees_and_returns_extras() -> None:
    fp = make_fingerprint("all_gather", "g", [((-1, 2), F32)], 0, with_frames=False)

    def body(verifier: Verifier, rank: int) -> Any:
        extras = verifier.full_check(fp, [rank + 1, 7])
        verifier.agree(fp)
        return extras, verifier.seq, verifier.full_checks

    assert _run_pair(body) == [([(1, 7), (2, 7)], 1, 1)] * 2


def test_full_check_mismatch_raises_on_both_and_keeps_history() -> None:
    def body(verifier: Verifier, rank: int) -> Any:
        fp = make_fingerprint("all_reduce", "loss", [((1000 if rank == 0 else 999,), F32)], 0)
        try:
            verifier.full_check(fp)
        except CollectiveMismatchError as exc:
            return exc, verifier.seq
        return None

    results = _run_pair(body)
    for exc, seq in results:
        assert isinstance(exc, CollectiveError)
        assert exc.calls == {"worker:0": "collective #1, loss: 1 tensor float32[1000]",
                             "worker:1": "collective #1, loss: 1 tensor float32[999]"}
        assert "worker:0 called collective #1, loss: 1 tensor float32[1000]" in str(exc)
        assert seq == 0
    assert results[0][0].task == "worker:0" and results[1][0].task == "worker:1"


def test_sequence_numbers_catch_a_skipped_collective() -> None:
    fp = make_fingerprint("all_reduce", "step", [((4,), F32)], 0)

    def body(verifier: Verifier, rank: int) -> Any:
        if rank == 0:
            verifier.agree(fp)  # as if worker 0 had run one more collective than worker 1
        try:
            verifier.full_check(fp)
        except CollectiveMismatchError as exc:
            return exc.calls
        return None

    calls = _run_pair(body)[0]
    assert calls == {"worker:0": "collective #2, step: 1 tensor float32[4]",
                     "worker:1": "collective #1, step: 1 tensor float32[4]"}


def test_prediction_follows_the_agreed_history() -> None:
    verifier = Verifier(lambda t: [t], ("worker:0",), 0)
    a = make_fingerprint("all_reduce", "a", [((2,), F32)], 0)
    b = make_fingerprint("all_reduce", "b", [((3,), F32)], 0)
    gather = make_fingerprint("all_gather", "g", [((-1,), F32)], 0, with_frames=False)
    assert verifier.predicted() is None
    for fp in (a, b, a):
        verifier.agree(fp)
    assert verifier.predicted() == b  # b followed a before
    verifier.agree(b)
    verifier.agree(gather)
    verifier.agree(b)
    assert verifier.predicted() is None  # a gather follows b, and cannot carry a header
    assert verifier.seq == 6


def test_mismatch_error_groups_identical_calls() -> None:
    exc = mismatch_error("worker:0", "op", {"worker:0": "A", "worker:1": "B", "worker:2": "A"})
    assert "worker:0, worker:2 called A; worker:1 called B" in str(exc)
    assert exc.operation == "op" and exc.task == "worker:0"


def test_too_many_extras_are_refused() -> None:
    verifier = Verifier(lambda t: [t], ("worker:0",), 0)
    fp = make_fingerprint("all_gather", "g", [((-1,), F32)], 0, with_frames=False)
    with pytest.raises(ValueError, match="at most 4 extras"):
        verifier.full_check(fp, [0] * 5)
