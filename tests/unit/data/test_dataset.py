import numpy as np
import pytest
import torch

from distribute.data import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset

from ._helpers import values


def test_cardinality_constants_and_len():
    assert INFINITE_CARDINALITY == -1 and UNKNOWN_CARDINALITY == -2
    assert len(Dataset.range(7).batch(2)) == 4
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(2).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(Dataset.range(2).filter(lambda x: True))


def test_as_numpy_iterator_and_reduce():
    out = list(Dataset.from_tensor_slices({"a": [1, 2], "s": ["x", "y"]}).as_numpy_iterator())
    assert isinstance(out[0]["a"], np.integer) and out[1]["s"] == b"y"
    assert isinstance(next(Dataset.range(4).batch(2).as_numpy_iterator()), np.ndarray)
    assert int(Dataset.range(5).reduce(0, lambda s, x: s + x)) == 10
    assert Dataset.range(3).reduce((0, 1), lambda s, x: (s[0] + x, s[1] * (x + 1)))[1].item() == 6


def test_apply():
    assert Dataset.range(4).apply(lambda ds: ds.batch(2)).cardinality() == 2
    with pytest.raises(TypeError, match="to return a Dataset; it returned int"):
        Dataset.range(4).apply(lambda ds: 3)


def test_graph_is_walkable_and_rewritable():
    source = Dataset.range(10)
    ds = source.shuffle(10, seed=1).batch(3).prefetch(1)
    ops = [node._op for node in ds._walk()]
    assert ops == ["prefetch", "batch", "shuffle", "range"]
    batch = ds._inputs()[0]
    assert batch.batch_size == 3 and batch.drop_remainder is False
    sharded_source = source.shard(2, 0)
    shuffle = batch._inputs()[0]
    rebuilt = ds._with_inputs((batch._with_inputs((shuffle._with_inputs((sharded_source,)),)),))
    assert sorted(sum(values(rebuilt), [])) == [0, 2, 4, 6, 8]
    assert values(ds)  # the original is untouched
    with pytest.raises(Exception, match="Dataset input"):
        ds._with_inputs((1,))


def test_names_are_checked():
    assert Dataset.range(3, name="r")._name == "r"
    with pytest.raises(TypeError, match="name"):
        Dataset.range(3, name=3)


def test_repr_and_spec_cache():
    ds = Dataset.range(3)
    assert "not computed" in repr(ds)
    ds.element_spec
    assert "TensorSpec" in repr(ds)


def test_iterating_twice_starts_again():
    ds = Dataset.range(3).map(lambda x: x + torch.tensor(1))
    assert values(ds) == values(ds) == [1, 2, 3]
