"""ParameterServerStrategy: cluster checks, placement, sharding and reads (spec 10.6, 7.5)."""

from __future__ import annotations

import logging

import pytest
import torch

import distribute
from distribute.cluster_resolver import ClusterSpec, SimpleClusterResolver
from distribute.experimental.partitioners import FixedShardsPartitioner


def _resolver(spec):
    return SimpleClusterResolver(ClusterSpec(spec), task_type="chief", task_id=0)


@pytest.mark.parametrize("spec, message", [
    ({}, "Cluster spec must be non-empty"),
    ({"worker": ["127.0.0.1:1"]}, "There must be at least one ps."),
    ({"ps": ["127.0.0.1:1"]}, "There must be at least one worker."),
])
def test_the_cluster_is_checked(spec, message):
    with pytest.raises(ValueError, match=message):
        distribute.ParameterServerStrategy(_resolver(spec))


def test_the_arguments_are_checked():
    with pytest.raises(TypeError, match="ClusterResolver"):
        distribute.ParameterServerStrategy({"ps": ["a:1"]})
    spec = {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}
    with pytest.raises(TypeError, match="variable_partitioner"):
        distribute.ParameterServerStrategy(_resolver(spec), variable_partitioner=3)


def test_the_experimental_name_is_the_same_class():
    assert distribute.experimental.ParameterServerStrategy is distribute.ParameterServerStrategy


def test_one_replica_per_worker_and_the_ps_devices(cluster):
    strategy = cluster.strategy()
    assert strategy.num_replicas_in_sync == 1
    assert strategy.extended.parameter_devices == ("/job:ps/replica:0/task:0/device:CPU:0",
                                                   "/job:ps/replica:0/task:1/device:CPU:0")


def test_variables_go_round_robin_over_the_ps_tasks(cluster):
    strategy = cluster.strategy()
    with strategy.scope():
        v1, v2, v3 = (distribute.Variable(float(i)) for i in range(3))
    assert [v.device for v in (v1, v2, v3)] == ["/job:ps/replica:0/task:0/device:CPU:0",
                                                "/job:ps/replica:0/task:1/device:CPU:0",
                                                "/job:ps/replica:0/task:0/device:CPU:0"]
    assert v1.name == "Variable:0"
    assert cluster.store(0)._vars.keys() == {v1.placement[1], v3.placement[1]}


def test_shards_continue_the_same_counter(cluster):
    strategy = cluster.strategy(FixedShardsPartitioner(2))
    with strategy.scope():
        distribute.Variable(0.0)  # ps:0; a scalar is never partitioned
        sharded = distribute.Variable(torch.arange(10.0).reshape(5, 2), name="w")
    assert isinstance(sharded, distribute.ShardedVariable)
    parts = sharded.variables
    assert [tuple(p.shape) for p in parts] == [(3, 2), (2, 2)]
    assert [p.device for p in parts] == ["/job:ps/replica:0/task:1/device:CPU:0",
                                         "/job:ps/replica:0/task:0/device:CPU:0"]
    assert [p.name for p in parts] == ["w/part_0:0", "w/part_1:0"]
    assert torch.equal(sharded.read_value(), torch.arange(10.0).reshape(5, 2))
    assert torch.equal(sharded + 1, torch.arange(10.0).reshape(5, 2) + 1)  # the shards, concatenated


def test_a_one_row_variable_is_not_sharded(cluster):
    strategy = cluster.strategy(FixedShardsPartitioner(3))
    with strategy.scope():
        one = distribute.Variable(torch.zeros(1, 3))
        two = distribute.Variable(torch.zeros(2, 4))
    assert not isinstance(one, distribute.ShardedVariable)
    assert len(two.variables) == 2


def test_a_bad_partitioner_result_is_an_error(cluster):
    strategy = cluster.strategy(lambda shape, dtype: [2, 2])
    with strategy.scope(), pytest.raises(ValueError):
        distribute.Variable(torch.zeros(4, 4))


def test_the_coordinator_reads_current_values_and_assigns_on_the_ps(cluster):
    strategy = cluster.strategy()
    with strategy.scope():
        v = distribute.Variable(torch.ones(3))
    v.assign_add(torch.ones(3))
    stored = cluster.store(v.placement[0])._vars[v.placement[1]].tensor
    assert stored.tolist() == [2.0, 2.0, 2.0]
    with torch.no_grad():
        stored.mul_(5)  # as if a worker had trained it
    assert v.numpy().tolist() == [10.0, 10.0, 10.0]
    assert (v * 1).tolist() == [10.0, 10.0, 10.0]
    assert "numpy=array([10., 10., 10.]" in repr(v)
    with pytest.raises(ValueError, match="Cannot assign a value of shape"):
        v.assign(torch.ones(2))


def test_module_parameters_live_on_the_ps_and_their_initialiser_is_kept(cluster):
    strategy = cluster.strategy()
    with strategy.scope():
        torch.manual_seed(0)
        layer = torch.nn.Linear(3, 2)
    torch.manual_seed(0)
    plain = torch.nn.Linear(3, 2)
    assert layer.weight.device.startswith("/job:ps/")
    assert torch.equal(layer.weight.read_value(), plain.weight.detach())
    assert torch.allclose(layer(torch.ones(1, 3)), plain(torch.ones(1, 3)))


def test_an_embedding_lookup_reads_only_its_rows(cluster):
    strategy = cluster.strategy(FixedShardsPartitioner(2))
    with strategy.scope():
        table = torch.nn.Embedding(1000, 8)
    assert isinstance(table.weight, distribute.ShardedVariable)
    full = table.weight.read_value()
    before = sum(cluster.store(i).bytes_out for i in range(2))
    rows = table(torch.tensor([[3, 900], [3, 5]]))
    moved = sum(cluster.store(i).bytes_out for i in range(2)) - before
    assert torch.equal(rows, full[torch.tensor([[3, 900], [3, 5]])])
    assert moved == 3 * 8 * 4  # three distinct rows of 8 floats


def test_sharded_assign_add(cluster):
    strategy = cluster.strategy(FixedShardsPartitioner(2))
    with strategy.scope():
        v = distribute.Variable(torch.zeros(5, 2))
    v.assign_add(torch.ones(5, 2))
    assert v.read_value().sum().item() == 10.0
    assert "ShardedVariable" in repr(v)


def test_run_outside_schedule_warns_and_runs_on_the_coordinator(cluster, caplog):
    strategy = cluster.strategy()
    with caplog.at_level(logging.WARNING, logger="distribute"):
        assert strategy.run(lambda: 1.0) == 1.0
    assert "invoked without using `ClusterCoordinator.schedule`" in caplog.text


def test_variables_cannot_be_made_inside_a_scheduled_function(cluster):
    strategy = cluster.strategy()
    coordinator = distribute.coordinator.ClusterCoordinator(strategy)
    coordinator.schedule(distribute.function(lambda: distribute.Variable(1.0)))
    with pytest.raises(ValueError, match="Creating variables inside a function scheduled"):
        coordinator.join()
