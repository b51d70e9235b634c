"""MultiWorkerMirroredStrategy in one process: arguments, roles, and the one-worker (local) mode.

The multi-process behaviour is in test_multi_worker_mirrored_mp.py.
"""

from __future__ import annotations

import copy
import socket
import time
import warnings

import pytest
import torch

import distribute
from distribute.cluster_resolver import (ClusterConfigError, ClusterSpec, SimpleClusterResolver,
                                         TFConfigClusterResolver)
from distribute._core.communicator import LOCAL
from distribute.collectives.cross_device_ops import CommunicationImplementation, CommunicationOptions
from distribute.collectives.failures import RendezvousTimeoutError
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredExtended, MultiWorkerMirroredStrategy


def local_strategy(**kwargs: object) -> MultiWorkerMirroredStrategy:
    return MultiWorkerMirroredStrategy(TFConfigClusterResolver(environ={}), **kwargs)


def one_worker_cluster(task_type: str = "worker", task_id: int = 0, **jobs: list) -> SimpleClusterResolver:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cluster = jobs or {"worker": [f"127.0.0.1:{port}"]}
    return SimpleClusterResolver(ClusterSpec(cluster), task_type=task_type, task_id=task_id)


def test_without_a_cluster_it_is_one_local_worker() -> None:
    strategy = local_strategy()
    ext = strategy.extended
    assert isinstance(ext, MultiWorkerMirroredExtended)
    assert strategy.num_replicas_in_sync == 1
    assert ext.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)
    assert (ext.task_type, ext.task_id) == (None, None)
    assert ext.should_checkpoint and ext.should_save_summary
    assert ext.experimental_between_graph and ext.experimental_should_init
    assert not ext._in_multi_worker_mode()
    assert ext._input_workers() == (1, 0)
    assert ext._any_worker_has_data(True) and not ext._any_worker_has_data(False)
    assert ext._agree_on_input_seed(5) == 5
    assert isinstance(strategy.cluster_resolver, TFConfigClusterResolver)


def test_default_resolver_reads_tf_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
    strategy = MultiWorkerMirroredStrategy()
    assert isinstance(strategy.cluster_resolver, TFConfigClusterResolver)
    assert strategy.num_replicas_in_sync == 1


@pytest.mark.parametrize("bad", ["worker:0", ClusterSpec({"worker": ["a:1"]}), 3])
def test_resolver_must_be_a_cluster_resolver(bad: object) -> None:
    with pytest.raises(ValueError, match="cluster_resolver must be an instance of "
                                         "distribute.cluster_resolver.ClusterResolver"):
        MultiWorkerMirroredStrategy(cluster_resolver=bad)  # type: ignore[arg-type]


def test_communication_options_must_be_options() -> None:
    with pytest.raises(ValueError, match="communication_options must be a "
                                         "distribute.experimental.CommunicationOptions"):
        local_strategy(communication_options={"timeout_seconds": 3})


def test_a_cluster_needs_the_task() -> None:
    resolver = SimpleClusterResolver(ClusterSpec({"worker": ["127.0.0.1:1", "127.0.0.1:2"]}))
    with pytest.raises(ValueError, match="When `cluster_spec` is given, you must also specify `task_type` "
                                         "and `task_id`."):
        MultiWorkerMirroredStrategy(resolver)


def test_cluster_rules() -> None:
    with pytest.raises(ValueError, match="No `worker`, `chief` or `evaluator` tasks can be found in `cluster_spec`."):
        MultiWorkerMirroredStrategy(one_worker_cluster("ps", 0, ps=["127.0.0.1:1"]))
    with pytest.raises(ValueError, match="runs on 'chief', 'worker' and 'evaluator' tasks; this task is ps:0"):
        MultiWorkerMirroredStrategy(one_worker_cluster("ps", 0, ps=["127.0.0.1:1"], worker=["127.0.0.1:2"]))
    with pytest.raises(ClusterConfigError, match="exceeds the maximum id"):
        MultiWorkerMirroredStrategy(one_worker_cluster("worker", 3))


def test_one_worker_cluster_needs_no_process_group() -> None:
    strategy = MultiWorkerMirroredStrategy(one_worker_cluster())
    ext = strategy.extended
    assert strategy.num_replicas_in_sync == 1 and ext._communicator is LOCAL
    assert ext.worker_devices == ("/job:worker/replica:0/task:0/device:CPU:0",)
    assert (ext.task_type, ext.task_id) == ("worker", 0)
    assert ext.should_checkpoint and not ext._in_multi_worker_mode()


def test_evaluator_runs_alone_and_is_its_own_chief() -> None:
    resolver = one_worker_cluster("evaluator", 0, chief=["127.0.0.1:1"], worker=["127.0.0.1:2", "127.0.0.1:3"],
                                  evaluator=["127.0.0.1:4"])
    strategy = MultiWorkerMirroredStrategy(resolver)
    assert strategy.num_replicas_in_sync == 1
    assert strategy.extended.should_checkpoint
    assert strategy.extended.worker_devices == ("/job:evaluator/replica:0/task:0/device:CPU:0",)


def test_local_training_reduce_and_gather() -> None:
    strategy = local_strategy()
    torch.manual_seed(0)
    with strategy.scope():
        model = torch.nn.Linear(3, 1)
        opt = distribute.optim.SGD(model.parameters(), lr=0.5)
    assert type(model.weight).__name__ == "MirroredVariable"
    before = model.weight.read_value().detach().clone()

    def step(x: torch.Tensor) -> torch.Tensor:
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    loss = strategy.run(step, args=(torch.ones(4, 3),))
    assert not torch.equal(model.weight.read_value().detach(), before)
    assert torch.equal(strategy.reduce("sum", loss, axis=None), loss)
    assert strategy.gather(strategy.run(lambda: torch.arange(3.0)), axis=0).tolist() == [0.0, 1.0, 2.0]
    ctx_sum = strategy.run(lambda: distribute.get_replica_context().all_reduce("mean", torch.tensor(3)))
    assert ctx_sum.dtype == torch.float64 and float(ctx_sum) == 3.0


def test_deepcopy_makes_an_independent_strategy() -> None:
    strategy = local_strategy()
    clone = copy.deepcopy(strategy)
    assert clone is not strategy and clone.extended is not strategy.extended
    assert clone.extended._container_strategy() is clone
    assert clone.cluster_resolver is strategy.cluster_resolver
    assert clone.run(lambda: torch.tensor(1.0)).item() == 1.0


def test_nccl_without_gpu_falls_back_to_gloo_with_a_warning() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    strategy = local_strategy(communication_options=CommunicationOptions(
        implementation=CommunicationImplementation.NCCL))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wants = strategy.extended._wants_nccl(strategy.extended._devices)
    assert not wants
    assert any("NCCL was requested but this worker has no GPU" in str(w.message) for w in caught)


def test_unreachable_chief_fails_within_the_timeout() -> None:
    ports = [one_worker_cluster().cluster_spec().task_address("worker", 0) for _ in range(2)]
    resolver = SimpleClusterResolver(ClusterSpec({"worker": ports}), task_type="worker", task_id=1)
    started = time.monotonic()
    with pytest.raises(RendezvousTimeoutError, match="could not reach the rendezvous host worker:0") as info:
        MultiWorkerMirroredStrategy(resolver, CommunicationOptions(timeout_seconds=1))
    assert time.monotonic() - started < 2.5
    assert info.value.task == "worker:1" and "worker:1" in info.value.missing


def test_experimental_form_takes_communication():
    import distribute.experimental as experimental

    strategy = experimental.MultiWorkerMirroredStrategy(experimental.CommunicationImplementation.RING)
    assert isinstance(strategy, distribute.MultiWorkerMirroredStrategy)
    assert strategy.num_replicas_in_sync == 1
    with pytest.raises(ValueError, match="CommunicationImplementation"):
        experimental.MultiWorkerMirroredStrategy("ring")
