"""The Communicator seam: the local implementation, and reductions that extend over workers through it."""

from typing import List

import pytest
import torch

import distribute
from distribute._base.reduce_op import ReduceOp
from distribute._core.communicator import (
    LOCAL,
    Communicator,
    Gathered,
    LocalCommunicator,
)
from distribute._core.reduction import reduce_components
from distribute.collectives.communicator import ProcessGroupCommunicator
from tests.strategies import named_strategies


class MirrorWorkers(Communicator):
    """``workers`` identical processes, simulated: every worker holds what this one holds."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.notes: List[str] = []

    @property
    def num_workers(self) -> int:
        return self.workers

    @property
    def rank(self) -> int:
        return 0

    def all_reduce(self, tensors, op=ReduceOp.SUM, *, note="all_reduce", timeout=None, inplace=False):
        self.notes.append(note)
        return [t * self.workers if op is ReduceOp.SUM else t.clone() for t in tensors]

    def all_gather(self, tensors, axis, *, note="all_gather", timeout=None):
        self.notes.append(note)
        return [Gathered(torch.cat([t] * self.workers, dim=axis), 0) for t in tensors]

    def broadcast(self, tensors, source=0, *, note="broadcast", timeout=None):
        self.notes.append(note)

    def any_true(self, flag, *, note="flag", timeout=None):
        self.notes.append(note)
        return bool(flag)


def test_local_communicator_returns_its_inputs():
    a, b = torch.ones(2), torch.zeros(3, dtype=torch.int64)
    for op in (ReduceOp.SUM, ReduceOp.MEAN):
        out = LOCAL.all_reduce([a, b], op)
        assert out[0] is a and out[1] is b
    (gathered,) = LOCAL.all_gather([a], 0)
    assert gathered.tensor is a and gathered.offset == 0
    LOCAL.broadcast([a], 0)
    assert LOCAL.any_true(True) and not LOCAL.any_true(False)
    assert (LOCAL.num_workers, LOCAL.rank) == (1, 0)
    assert isinstance(LOCAL, LocalCommunicator) and repr(LOCAL) == "LocalCommunicator()"


def test_local_communicator_refuses_a_string_op_and_another_source():
    with pytest.raises(TypeError, match="op must be a distribute.ReduceOp"):
        LOCAL.all_reduce([torch.ones(1)], "sum")
    with pytest.raises(ValueError, match="source must be 0"):
        LOCAL.broadcast([torch.ones(1)], 1)


def test_communicator_is_abstract():
    with pytest.raises(TypeError):
        Communicator()


# The in-process strategies only: a multi-worker strategy holds a process-group communicator.
@pytest.mark.parametrize("make_strategy", named_strategies("default", "one_device", "mirrored_2", "central_storage_2"))
def test_in_process_strategies_hold_the_local_communicator(make_strategy):
    assert make_strategy().extended._communicator is LOCAL


def test_reduce_components_sums_over_the_workers():
    workers = MirrorWorkers(3)
    out = reduce_components(ReduceOp.SUM, [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])], None,
                            torch.device("cpu"), workers)
    torch.testing.assert_close(out, torch.tensor([12.0, 18.0]))
    assert workers.notes == ["cross-worker reduction"]


def test_reduce_components_mean_counts_every_workers_elements():
    workers = MirrorWorkers(2)
    comps = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([5.0])]  # uneven per-replica batches
    out = reduce_components(ReduceOp.MEAN, comps, 0, torch.device("cpu"), workers)
    torch.testing.assert_close(out, torch.tensor(11.0 / 4))  # (2 * 11) / (2 * 4)
    assert workers.notes == ["cross-worker reduction", "cross-worker reduction"]


def test_reduce_components_with_one_worker_exchanges_nothing():
    workers = MirrorWorkers(1)
    out = reduce_components(ReduceOp.MEAN, [torch.tensor(1.0), torch.tensor(2.0)], None, torch.device("cpu"),
                            workers)
    torch.testing.assert_close(out, torch.tensor(1.5))
    assert workers.notes == []


def test_process_group_communicator_needs_a_process_group():
    with pytest.raises(TypeError, match="group must be a distribute.collectives.process_group.ProcessGroup"):
        ProcessGroupCommunicator(LOCAL)  # type: ignore[arg-type]


def test_multi_worker_strategy_alone_holds_the_local_communicator():
    strategy = distribute.MultiWorkerMirroredStrategy(distribute.cluster_resolver.SimpleClusterResolver(
        distribute.cluster_resolver.ClusterSpec({})))
    assert strategy.extended._communicator is LOCAL
