"""Distributed values and variables against the assertions of TensorFlow's own tests.

Issues 21 (points 3, 6, 7, 9), 23 (point 2) and 25 (point 4): local results of plain
structures, regrouping a variable's components, cross-replica writes of SyncOnRead variables,
variables created under different names, results whose structures differ, and the class
hierarchy. Translated from the behaviour of values_test.py, distribute_utils_test.py,
mirrored_variable_test.py and mirrored_strategy_test.py.
"""

import collections

import pytest
import torch

import distribute
from distribute._core.values import regroup
from distribute.errors import InvalidArgumentError
from tests.strategies import local_replica_ids, named_strategies

ALL = named_strategies() + [
    pytest.param(lambda: distribute.MirroredStrategy(["CPU:0"]), id="mirrored_1"),
    pytest.param(lambda: distribute.MirroredStrategy(["CPU:0", "CPU:1", "CPU:2"]), id="mirrored_3"),
]
MIRRORED = [pytest.param(n, id=f"mirrored_{n}") for n in (1, 2, 3)]


def rid():
    return int(distribute.get_replica_context().replica_id_in_sync_group)


def mirrored(n):
    return distribute.MirroredStrategy([f"CPU:{i}" for i in range(n)])


# -- 21.3: local results of a structure with no tensors --------------------------------------
@pytest.mark.parametrize("make_strategy", ALL)
def test_local_results_of_a_plain_structure_has_one_copy_per_replica(make_strategy):
    s = make_strategy()
    n = len(local_replica_ids(s))  # one copy per replica of this process
    assert s.experimental_local_results({"a": 1.0, "b": 2.0}) == ({"a": 1.0, "b": 2.0},) * n
    assert s.experimental_local_results([1, (2, 3)]) == ([1, (2, 3)],) * n
    t = torch.tensor(1.0)
    assert s.experimental_local_results(t) == (t,)  # a leaf stays one value, as in TF


@pytest.mark.parametrize("n", MIRRORED)
def test_local_results_of_a_structure_substitutes_each_replicas_components(n):
    s = mirrored(n)
    with s.scope():
        v = distribute.Variable(0.0)
    pr = s.experimental_distribute_values_from_function(lambda c: torch.tensor(float(c.replica_id_in_sync_group)))
    results = s.experimental_local_results({"a": pr, "b": 3, "v": v})
    assert [float(r["a"]) for r in results] == [float(i) for i in range(n)]
    assert [r["b"] for r in results] == [3] * n
    assert [r["v"] for r in results] == list(v.values)


# -- 21.6: regrouping a variable's components gives back the variable ------------------------
@pytest.mark.parametrize("n", MIRRORED)
@pytest.mark.parametrize("synchronization", ["on_write", "on_read"])
def test_regrouping_the_components_of_a_variable_gives_the_variable(n, synchronization):
    s = mirrored(n)
    with s.scope():
        v = distribute.Variable(1.0, synchronization=synchronization, aggregation="sum")
    assert regroup(v.values) is v
    assert s.run(lambda: v.values[rid()]) is v
    assert s.run(lambda: {"v": [v.values[rid()]]})["v"][0] is v


def test_regrouping_components_of_different_variables_stays_per_replica():
    s = mirrored(2)
    with s.scope():
        v, w = distribute.Variable(1.0), distribute.Variable(2.0)
    out = regroup([v.values[0], w.values[1]])
    assert isinstance(out, distribute.PerReplica)
    assert out.values == (v.values[0], w.values[1])


# -- 21.7: cross-replica writes of a SyncOnRead variable return a tensor ------------------------
@pytest.mark.parametrize("aggregation", ["mean", "only_first_replica"])
@pytest.mark.parametrize("n", [2, 3])
def test_sync_on_read_cross_replica_writes_return_a_tensor(aggregation, n):
    s = mirrored(n)
    with s.scope():
        v = distribute.Variable(1.0, synchronization="on_read", aggregation=aggregation)
    for kind, arg, expected in (("assign", 5.0, 5.0), ("assign_add", 2.0, 7.0), ("assign_sub", 3.0, 4.0)):
        out = getattr(v, kind)(arg)
        assert isinstance(out, torch.Tensor) and not isinstance(out, distribute.DistributedValues), kind
        assert float(out) == expected and [float(c) for c in v.values] == [expected] * n
    assert v.assign(6.0, read_value=False) is None


def test_sync_on_read_cross_replica_write_sum_and_none():
    s = mirrored(2)
    with s.scope():
        total = distribute.Variable(0.0, synchronization="on_read", aggregation="sum")
        none = distribute.Variable(0.0, synchronization="on_read", aggregation="none")
    out = total.assign(10.0)
    assert type(out) is torch.Tensor and float(out) == 10.0
    assert [float(c) for c in total.values] == [5.0, 5.0]
    with pytest.raises(ValueError, match="Could not convert from .*VariableAggregation.NONE"):
        none.assign(4.0)  # TF writes, then its read-back raises
    assert [float(c) for c in none.values] == [4.0, 4.0]
    assert none.assign(3.0, read_value=False) is None
    assert repr(none).startswith("SyncOnReadVariable:{\n  0: <distribute.Variable 'Variable:0' shape=()")


def test_mirrored_variable_cross_replica_writes_still_return_mirrored():
    s = mirrored(2)
    with s.scope():
        v = distribute.Variable(1.0)
    assert isinstance(v.assign_add(1.0), distribute.Mirrored)


# -- 21.9: replicas creating variables under different names -----------------------------------
@pytest.mark.timeout(30)
def test_replicas_creating_variables_with_different_names_raise():
    s = mirrored(2)
    with s.scope():
        with pytest.raises(RuntimeError, match="replica 0: 'foo', replica 1: 'bar'"):
            s.run(lambda: distribute.Variable(1.0, name="foo" if rid() == 0 else "bar"))
    assert s.run(lambda: 1) == 1


@pytest.mark.timeout(30)
def test_one_replica_of_three_naming_its_variable_differently_raises():
    s = mirrored(3)
    names = ["w", "w", None]
    with pytest.raises(RuntimeError, match="different names.*replica 2: None"):
        s.run(lambda: distribute.Variable(1.0, name=names[rid()]))


@pytest.mark.timeout(30)
def test_replicas_creating_a_variable_with_one_name_get_one_variable():
    s = mirrored(2)
    v = s.run(lambda: distribute.Variable(float(rid()), name="".join(["f", "oo"])))
    assert isinstance(v, distribute.MirroredVariable) and v.name == "foo:0"
    assert [float(c) for c in v.values] == [0.0, 0.0]  # replica 0's initial value, as in TF


# -- 23.2: results whose structures differ across replicas -------------------------------------
Pair = collections.namedtuple("Pair", "x y")
Other = collections.namedtuple("Other", "x y")
MISMATCHES = [
    pytest.param(lambda r: [torch.tensor(0.0)] * r, r"replica 0 has list of 0 \[\] but replica 1 has list of 1",
                 id="list-lengths"),
    pytest.param(lambda r: {"a" if r == 0 else "b": torch.tensor(0.0)},
                 r"replica 0 has dict \{'a': tensor\} but replica 1 has dict \{'b': tensor\}", id="dict-keys"),
    pytest.param(lambda r: (1, 2) if r == 0 else [1, 2], "replica 0 has tuple of 2 .* replica 1 has list of 2",
                 id="tuple-vs-list"),
    pytest.param(lambda r: Pair(1, 2) if r == 0 else Other(1, 2), "Pair of 2 .* Other of 2", id="namedtuples"),
    pytest.param(lambda r: torch.tensor(0.0) if r == 0 else [torch.tensor(0.0)],
                 r"replica 0 has tensor but replica 1 has list of 1", id="tensor-vs-list"),
    pytest.param(lambda r: {"x": [1, [2] * (r + 1)]}, r"at \['x'\]\[1\]: replica 0 has list of 1", id="nested"),
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("make,match", MISMATCHES)
def test_results_with_different_structures_raise_naming_the_replicas(make, match):
    s = mirrored(2)
    with pytest.raises(InvalidArgumentError, match=match) as info:
        s.run(lambda: make(rid()))
    assert isinstance(info.value, ValueError)
    assert "different structures" in str(info.value)


@pytest.mark.timeout(30)
def test_merge_call_arguments_with_different_structures_raise():
    s = mirrored(3)

    def step():
        args = ([torch.tensor(1.0)] * (1 if rid() < 2 else 2),)
        return distribute.get_replica_context().merge_call(lambda strategy, a: a, args=args)

    with pytest.raises(InvalidArgumentError, match="replica 2 has list of 2"):
        s.run(step)
    assert s.run(lambda: 1) == 1


def test_matching_structures_still_regroup():
    s = mirrored(2)
    out = s.run(lambda: {"a": [torch.tensor(float(rid())), 7], "p": Pair(1, torch.Size([2]))})
    assert isinstance(out["a"][0], distribute.PerReplica) and out["a"][1] == 7
    assert isinstance(out["p"], Pair) and out["p"].x == 1
    sizes = s.run(lambda: torch.Size([rid() + 1]))  # a Size is a value, not a structure
    assert isinstance(sizes, distribute.PerReplica)


# -- 25.4: the class hierarchy --------------------------------------------------------------------
@pytest.mark.parametrize("n", MIRRORED)
def test_class_hierarchy_matches_tensorflow(n):
    s = mirrored(n)
    with s.scope():
        mv = distribute.Variable(1.0)
        sv = distribute.Variable(1.0, synchronization="on_read", aggregation="sum")
    for v in (mv, sv):
        assert isinstance(v, distribute.DistributedVariable)
        assert isinstance(v, distribute.DistributedValues)
        assert isinstance(v, distribute.Variable) and isinstance(v, torch.Tensor)
    assert isinstance(mv, distribute.MirroredVariable) and isinstance(mv, distribute.Mirrored)
    assert not isinstance(sv, distribute.Mirrored) and not isinstance(sv, distribute.PerReplica)
    assert not isinstance(mv, distribute.PerReplica)
    assert issubclass(distribute.MirroredVariable, distribute.Mirrored)
    assert issubclass(distribute.SyncOnReadVariable, distribute.DistributedVariable)
    assert issubclass(distribute.DistributedVariable, distribute.DistributedValues)
    returned = s.run(lambda: mv)  # the v1 Strategy page: results kept in sync are Mirrored
    assert returned is mv and isinstance(returned, distribute.Mirrored)


def test_aggregating_variable_is_a_variable_not_distributed_values():
    s = distribute.experimental.CentralStorageStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        v = distribute.Variable(1.0)
    assert isinstance(v, distribute.AggregatingVariable) and isinstance(v, distribute.Variable)
    assert not isinstance(v, distribute.DistributedValues)  # TF: a BaseResourceVariable wrapper


@pytest.mark.timeout(30)
def test_mirrored_variables_mix_with_mirrored_and_per_replica_values():
    s = mirrored(2)
    with s.scope():
        v = distribute.Variable([1.0, 2.0])
    m = distribute.Mirrored([torch.tensor([10.0, 10.0]), torch.tensor([20.0, 20.0])])
    assert (m + v).tolist() == (v + m).tolist() == torch.add(m, v).tolist() == [11.0, 12.0]
    pr = distribute.PerReplica([torch.tensor(1.0), torch.tensor(2.0)])
    out = s.run(lambda p: (torch.add(m, v), v * p), args=(pr,))
    assert [t.tolist() for t in out[0].values] == [[11.0, 12.0], [21.0, 22.0]]
    assert [t.tolist() for t in out[1].values] == [[1.0, 2.0], [2.0, 4.0]]
    assert not hasattr(v, "no_such_attribute")
    with pytest.raises(AttributeError, match="no_such_attribute"):
        v.no_such_attribute
    assert s.experimental_local_results(v) == v.values
    assert s.run(lambda: v + 0.0).values[1].tolist() == [1.0, 2.0]
