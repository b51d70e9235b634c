"""Gather shape mismatches across workers are InvalidArgumentErrors (issue 26.2), on the verifier.

The multi-process behaviour is in tests/unit/strategies/test_multi_worker_tf_tests_mp.py.
"""

from __future__ import annotations

import torch

from distribute.collectives.failures import CollectiveMismatchError, WorkerGatherShapeMismatchError
from distribute.collectives.verify import Verifier, family_digest, make_fingerprint
from distribute.errors import GatherShapeMismatchError, InvalidArgumentError
from .test_verify import _run_pair

F32 = torch.float32


def _gather_check(shapes: list, families: list) -> list:
    def body(verifier: Verifier, rank: int) -> object:
        fp = make_fingerprint("all_gather", "gather", [(shapes[rank], F32)], 0, with_frames=False)
        return verifier.full_check(fp, [1], families[rank], f"gather of shape {list(shapes[rank])}")

    return _run_pair(body)


def test_same_gather_different_shapes_is_an_argument_error_on_both() -> None:
    family = family_digest("all_gather|gather|float32|0")
    results = _gather_check([(-1, 3), (-1, 4)], [family, family])
    for exc in results:
        assert isinstance(exc, WorkerGatherShapeMismatchError), exc
        assert isinstance(exc, GatherShapeMismatchError) and isinstance(exc, InvalidArgumentError)
        assert isinstance(exc, CollectiveMismatchError) and isinstance(exc, ValueError)
        assert "Shape mismatch" in str(exc)
        assert "gather of shape [-1, 3]" in str(exc) and "gather of shape [-1, 4]" in str(exc)
        assert set(exc.calls) == {"worker:0", "worker:1"}


def test_different_ranks_are_a_shape_mismatch_too() -> None:
    family = family_digest("all_gather|gather|float32|0")
    results = _gather_check([(-1, 3), (-1,)], [family, family])
    assert all(isinstance(exc, WorkerGatherShapeMismatchError) for exc in results), results


def test_different_calls_stay_a_plain_mismatch() -> None:
    results = _gather_check([(-1, 3), (-1, 4)], [family_digest("a"), family_digest("b")])
    for exc in results:
        assert type(exc) is CollectiveMismatchError, exc
        assert not isinstance(exc, ValueError)
    results = _gather_check([(-1, 3), (-1, 4)], [0, 0])  # no family given: a plain mismatch
    assert all(type(exc) is CollectiveMismatchError for exc in results), results
