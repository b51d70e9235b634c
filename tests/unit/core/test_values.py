import collections

import pytest
import torch

import distribute
from distribute._core.values import regroup, select_replica


@pytest.fixture
def mirrored():
    return distribute.MirroredStrategy(["CPU:0", "CPU:1"])


def test_per_replica_repr_and_str_layout(mirrored):
    pr = mirrored.run(lambda: torch.tensor(distribute.get_replica_context().replica_id_in_sync_group))
    assert isinstance(pr, distribute.PerReplica)
    assert isinstance(pr, distribute.DistributedValues)
    expected = "PerReplica:{\n  0: %s,\n  1: %s\n}"
    assert repr(pr) == expected % (repr(pr.values[0]), repr(pr.values[1]))
    assert str(pr) == expected % (str(pr.values[0]), str(pr.values[1]))


def test_mirrored_repr_one_line_per_component():
    m = distribute.Mirrored((torch.tensor(1.0),))
    assert repr(m) == "Mirrored:{\n  0: tensor(1.)\n}"


def test_mirrored_variable_repr_exact(mirrored):
    with mirrored.scope():
        v = distribute.Variable(1.0)
    assert repr(v) == (
        "MirroredVariable:{\n"
        "  0: <distribute.Variable 'Variable:0' shape=() dtype=float32, numpy=1.0>,\n"
        "  1: <distribute.Variable 'Variable/replica_1:0' shape=() dtype=float32, numpy=1.0>\n"
        "}")


def test_regroup_rules(mirrored):
    t = torch.tensor(3.0)
    assert mirrored.run(lambda: 5) == 5
    assert mirrored.run(lambda: t) is t
    assert mirrored.run(lambda: None) is None
    assert mirrored.run(lambda x, y: x + y, args=(1, 2)) == 3
    out = mirrored.run(lambda: torch.tensor(1))
    assert isinstance(out, distribute.PerReplica)
    assert [int(x) for x in out.values] == [1, 1]


def test_regroup_returns_variable_container(mirrored):
    with mirrored.scope():
        v = distribute.Variable(1.0)
    assert mirrored.run(lambda: v) is v


def test_regroup_nested_structures(mirrored):
    Pair = collections.namedtuple("Pair", "a b")

    def fn():
        rid = distribute.get_replica_context().replica_id_in_sync_group
        return {"x": {"y": torch.tensor(rid)}, "p": Pair(5, torch.tensor(rid * 10)), "l": [7]}

    out = mirrored.run(fn)
    assert isinstance(out, dict) and isinstance(out["x"], dict)
    assert [int(v) for v in out["x"]["y"].values] == [0, 1]
    assert type(out["p"]) is Pair and out["p"].a == 5
    assert [int(v) for v in out["p"].b.values] == [0, 10]
    assert out["l"] == [7]


def test_regroup_direct():
    a, b = torch.tensor(1), torch.tensor(2)
    pr = regroup([{"k": a}, {"k": b}])
    assert isinstance(pr["k"], distribute.PerReplica) and pr["k"].values == (a, b)
    assert regroup([a, a]) is a


def test_single_replica_mirrored_returns_bare_value():
    s = distribute.MirroredStrategy(["CPU:0"])
    out = s.run(lambda: torch.tensor(1))
    assert isinstance(out, torch.Tensor) and not isinstance(out, distribute.DistributedValues)


def test_select_replica():
    pr = distribute.PerReplica((torch.tensor(0), torch.tensor(1)))
    s = {"a": pr, "b": 3, "c": [pr]}
    one = select_replica(1, s)
    assert int(one["a"]) == 1 and one["b"] == 3 and int(one["c"][0]) == 1


def test_run_unwraps_per_replica_args(mirrored):
    pr = mirrored.experimental_distribute_values_from_function(
        lambda ctx: torch.tensor(float(ctx.replica_id_in_sync_group)))
    out = mirrored.run(lambda x, k: x * 2 + k["z"], args=(pr,), kwargs={"k": {"z": 1.0}})
    assert [float(v) for v in out.values] == [1.0, 3.0]


def test_per_replica_has_no_operators():
    pr = distribute.PerReplica((torch.tensor(0), torch.tensor(1)))
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'PerReplica' and 'int'"):
        pr + 1


def test_torch_op_on_per_replica_outside_replica_context():
    pr = distribute.PerReplica((torch.tensor(0.0), torch.tensor(1.0)))
    with pytest.raises(ValueError, match="PerReplica object while not inside a replica context"):
        torch.add(pr, 1)


def test_mirrored_delegates_operators():
    m = distribute.Mirrored((torch.tensor(2.0), torch.tensor(2.0)))
    assert float(m + 1) == 3.0
    assert float(m * 3) == 6.0
