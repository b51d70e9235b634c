import os

import pytest
import torch

from distribute.data import Dataset
from distribute.errors import DataLossError, NotFoundError

from .._helpers import assert_restores, values


def _counting(counter):
    def f(x):
        counter.append(int(x))
        return x * 10
    return f


def test_memory_cache_runs_the_input_once():
    calls = []
    ds = Dataset.range(4).map(_counting(calls)).cache()
    calls.clear()  # the map function ran on two placeholders when the dataset was built
    assert values(ds) == [0, 10, 20, 30]
    assert values(ds) == [0, 10, 20, 30]
    assert values(ds.repeat(2)) == [0, 10, 20, 30] * 2
    assert len(calls) == 4
    assert ds.cardinality() == 4


def test_partial_iteration_publishes_nothing():
    calls = []
    ds = Dataset.range(4).map(_counting(calls)).with_options(_no_vec()).cache()
    calls.clear()  # the map function ran on two placeholders when the dataset was built
    values(ds, 2)
    assert values(ds) == [0, 10, 20, 30]
    assert len(calls) == 6


def test_cache_keeps_the_first_shuffle_order():
    ds = Dataset.range(10).shuffle(10, seed=3).cache().repeat(3).batch(10)
    epochs = values(ds)
    assert epochs[0] == epochs[1] == epochs[2] and sorted(epochs[0]) == list(range(10))


def test_file_cache_is_reused_across_datasets(tmp_path):
    calls = []
    path = str(tmp_path / "cache")
    first = Dataset.from_tensor_slices(["a", "b"]).map(lambda s: (s, torch.tensor(len(calls)))).cache(path)
    assert values(first) == [(b"a", 0), (b"b", 0)]
    assert os.path.exists(path + ".index")
    second = Dataset.range(100).map(_counting(calls)).map(lambda x: (b"z", x)).cache(path)
    assert values(second) == [(b"a", 0), (b"b", 0)]
    assert 0 not in calls and len(calls) <= 2  # only the element_spec probe ran the function


def test_file_cache_errors(tmp_path):
    with pytest.raises(NotFoundError, match="does not exist"):
        list(Dataset.range(3).cache(str(tmp_path / "missing" / "c")))
    path = str(tmp_path / "c")
    values(Dataset.range(3).cache(path))
    with open(path + ".chunk-00000", "wb") as f:
        f.write(b"garbage")
    with pytest.raises(DataLossError, match="chunk-00000"):
        list(Dataset.range(3).cache(path))
    with pytest.raises(TypeError, match="filename"):
        Dataset.range(3).cache(3)


def test_cache_restores_in_write_and_read_modes(tmp_path):
    assert_restores(lambda: Dataset.range(12).shuffle(5, seed=1).cache().repeat(2), positions=(0, 5, 12, 15))
    path = str(tmp_path / "c")
    assert_restores(lambda: Dataset.range(12).cache(path).repeat(2), positions=(0, 5, 13))


def test_memory_cache_refills_on_restore_in_a_new_pipeline():
    make = lambda: Dataset.range(8).shuffle(8, seed=2).cache().repeat(2)
    it = iter(make())
    values(it, 11)
    state = it.state_dict()
    assert state["pipeline"]["input"]["mode"] == "read"
    rest = values(it)
    fresh = iter(make())
    fresh.load_state_dict(state)
    assert values(fresh) == rest


def _no_vec():
    from .._helpers import no_vectorization
    return no_vectorization()
