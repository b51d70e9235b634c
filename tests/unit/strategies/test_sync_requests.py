"""Typed synchronisation requests: each kind checks agreement and merges by itself."""

import re

import pytest
import torch

import distribute
from distribute._base.reduce_op import ReduceOp
from distribute.errors import CollectiveError, GatherShapeMismatchError
from distribute.strategies.sync_requests import AllGather, AllReduce, GradientSync, MergeCall, SyncRequest


def test_requests_of_the_same_kind_and_shapes_agree():
    requests = [AllReduce(ReduceOp.SUM, {"a": torch.ones(2)}, False) for _ in range(3)]
    assert requests[0].disagreement(requests) is None
    assert MergeCall(print, (), {}).disagreement([MergeCall(print, (), {}), MergeCall(len, (1,), {})]) is None


@pytest.mark.parametrize("other,match", [
    (AllGather(0, torch.ones(2), False), "replica 0 called all_reduce\\(SUM\\) but replica 1 called all_gather"),
    (AllReduce(ReduceOp.MEAN, torch.ones(2), False), "called all_reduce\\(SUM\\) but replica 1 called all_reduce\\(MEAN\\)"),
    (MergeCall(print, (), {}), "but replica 1 called merge_call"),
    (AllReduce(ReduceOp.SUM, torch.ones(3), False), "Replicas disagree on all_reduce\\(SUM\\): .*\\(2,\\).*\\(3,\\)"),
    (AllReduce(ReduceOp.SUM, [torch.ones(2)], False), "replica 0 passed \\('tensor'.* replica 1 passed \\('\\[tensor\\]'"),
], ids=["other_collective", "other_op", "merge_call", "shape", "structure"])
def test_disagreement_names_both_replicas(other, match):
    first = AllReduce(ReduceOp.SUM, torch.ones(2), False)
    error = first.disagreement([first, other])
    assert isinstance(error, CollectiveError)
    assert re.search(match, str(error))


def test_all_gather_shapes_differ_only_along_its_axis():
    along = [AllGather(1, torch.zeros(2, k), False) for k in (1, 3)]
    assert along[0].disagreement(along) is None
    across = [AllGather(0, torch.zeros(2, k), False) for k in (1, 3)]
    error = across[0].disagreement(across)
    assert isinstance(error, GatherShapeMismatchError) and isinstance(error, ValueError)
    assert "replica 0: (2, 1), replica 1: (2, 3)" in str(error)
    dtypes = [AllGather(0, torch.zeros(2, dtype=d), False) for d in (torch.float32, torch.int64)]
    assert type(dtypes[0].disagreement(dtypes)) is CollectiveError


def test_gradient_syncs_compare_shapes_and_dtypes():
    ok = [GradientSync("all_reduce(SUM)", ReduceOp.SUM, torch.ones(2)) for _ in range(2)]
    assert ok[0].disagreement(ok) is None
    bad = [ok[0], GradientSync("all_reduce(SUM)", ReduceOp.SUM, torch.ones(2, dtype=torch.float64))]
    assert "Replicas disagree on gradient of all_reduce(SUM)" in str(bad[0].disagreement(bad))


def test_every_request_kind_defines_its_merge():
    with pytest.raises(TypeError, match="abstract"):
        SyncRequest()
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    grads = [GradientSync("all_reduce(SUM)", ReduceOp.SUM, torch.full((2,), float(i))) for i in (1, 2)]
    assert [g.tolist() for g in grads[0].merge(s.extended, grads)] == [[3.0, 3.0], [3.0, 3.0]]
    calls = [MergeCall(lambda strategy, x: (strategy, x.values), (torch.tensor(float(i)),), {}) for i in (1, 2)]
    results = calls[0].merge(s.extended, calls)
    assert results[0][0] is s and [float(v) for v in results[0][1]] == [1.0, 2.0]
