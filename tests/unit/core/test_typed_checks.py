"""Distributed variables are recognised by their classes (isinstance), not by private flags."""

import pytest
import torch

import distribute
from distribute.distributed_input.input_workers import InputWorkers
from tests.strategies import named_strategies

ON_READ = dict(synchronization=distribute.VariableSynchronization.ON_READ,
               aggregation=distribute.VariableAggregation.SUM)


def _two():
    return distribute.MirroredStrategy(["CPU:0", "CPU:1"])


def test_value_container_of_a_component_is_its_variable():
    s = _two()
    with s.scope():
        v = distribute.Variable(1.0)
    assert all(s.extended.value_container(c) is v for c in v.values)
    plain, tensor = distribute.Variable(2.0), torch.tensor(3.0)
    assert s.extended.value_container(plain) is plain and s.extended.value_container(tensor) is tensor


@pytest.mark.parametrize("make_strategy", named_strategies("one_device", "mirrored_2", "central_storage_2"))
def test_variable_created_in_scope_needs_a_variable_of_this_strategy(make_strategy):
    s = make_strategy()
    with s.scope():
        v = distribute.Variable(1.0)
    assert s.extended.variable_created_in_scope(v)
    assert not s.extended.variable_created_in_scope(torch.tensor(1.0))
    assert not s.extended.variable_created_in_scope(distribute.Variable(1.0))
    assert not _two().extended.variable_created_in_scope(v)


def test_default_strategy_owns_plain_variables_only():
    default = distribute.get_strategy()
    with _two().scope():
        v = distribute.Variable(1.0)
    assert default.extended.variable_created_in_scope(distribute.Variable(1.0))
    assert not default.extended.variable_created_in_scope(v)


def test_reduce_recognises_each_kind_of_distributed_variable():
    s = _two()
    with s.scope():
        mirrored = distribute.Variable(3.0)
        on_read = distribute.Variable(0.0, **ON_READ)
    s.run(lambda: on_read.assign(distribute.get_replica_context().replica_id_in_sync_group + 1.0))
    assert float(s.reduce("sum", on_read, axis=None)) == 3.0  # a PerReplica of 1 and 2
    assert float(s.reduce("mean", mirrored, axis=None)) == 3.0  # a Mirrored: its value
    with pytest.raises(ValueError, match="A Mirrored value cannot be reduced with ReduceOp.SUM"):
        s.reduce("sum", mirrored, axis=None)


def test_reduce_to_recognises_each_kind_of_distributed_variable():
    s = _two()
    with s.scope():
        mirrored = distribute.Variable(3.0)
        on_read = distribute.Variable(0.0, **ON_READ)
    s.run(lambda: on_read.assign(distribute.get_replica_context().replica_id_in_sync_group + 1.0))
    assert float(s.extended.reduce_to("sum", on_read, "CPU:0")) == 3.0
    assert float(s.extended.reduce_to("mean", mirrored, "CPU:0")) == 3.0
    with pytest.raises(ValueError, match="A Mirrored value cannot be reduced with ReduceOp.SUM"):
        s.extended.reduce_to("sum", mirrored, "CPU:0")


def test_read_var_and_local_results_of_variables_and_tensors():
    s = _two()
    with s.scope():
        v = distribute.Variable(5.0)
    assert float(s.extended.read_var(v)) == 5.0 and float(s.extended.read_var(torch.tensor(4.0))) == 4.0
    assert s.experimental_local_results(v) == v.values and len(v.values) == 2


def test_update_of_a_plain_tensor_runs_once():
    s = _two()
    t = torch.zeros(())
    with s.scope():
        s.extended.update(t, lambda c: c.add_(1.0))
    assert float(t) == 1.0


def test_colocate_vars_with_refuses_what_this_strategy_did_not_create():
    s = _two()
    with s.scope():
        with pytest.raises(ValueError, match="must only be passed a variable created in this"):
            s.extended.colocate_vars_with(torch.tensor(1.0))


# The in-process strategies only: a multi-worker strategy has its cluster resolver.
@pytest.mark.parametrize("make_strategy", named_strategies("default", "one_device", "mirrored_2", "central_storage_2"))
def test_local_strategies_have_no_cluster_resolver(make_strategy):
    assert make_strategy().cluster_resolver is None


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_input_devices_come_from_the_declared_devices(make_strategy):
    s = make_strategy()
    expected = tuple(d.torch_device for d in s.extended._devices) or (torch.device("cpu"),)
    assert InputWorkers.from_strategy(s).devices == expected
