import collections

import pytest
import torch

from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import AUTOTUNE, Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, no_vectorization, values


def test_map_unpacks_tuples_but_not_namedtuples_or_dicts():
    assert values(Dataset.zip(Dataset.range(3), Dataset.range(3)).map(lambda a, b: a + b)) == [0, 2, 4]
    Pair = collections.namedtuple("Pair", "a b")
    ds = Dataset.from_tensors(Pair(1, 2)).map(lambda p: p.a * 10 + p.b)
    assert values(ds) == [12]
    assert values(Dataset.from_tensors({"x": 3}).map(lambda d: d["x"] + 1)) == [4]


def test_map_converts_outputs_and_infers_spec():
    ds = Dataset.range(3).map(lambda x: (x, float(x) * 0.5, "s"))
    assert values(ds) == [(0, 0.0, b"s"), (1, 0.5, b"s"), (2, 1.0, b"s")]
    assert ds.element_spec == (TensorSpec((), torch.int64), TensorSpec((), torch.float32), TensorSpec((), string))
    ragged = Dataset.range(1, 4).map(lambda x: torch.arange(int(x)))
    assert ragged.element_spec == TensorSpec((None,), torch.int64)
    fixed = Dataset.from_tensor_slices(torch.zeros(4, 3)).map(lambda x: x.sum(0, keepdim=True))
    assert fixed.element_spec == TensorSpec((1,), torch.float32)


def test_map_spec_falls_back_to_the_first_element():
    ds = Dataset.from_tensor_slices(["1.5", "2"]).map(lambda s: float(s.decode()) + 0)
    assert ds.element_spec == TensorSpec((), torch.float32)
    assert values(ds) == [1.5, 2.0]


@pytest.mark.parametrize("vectorize", [True, False])
def test_map_batch_results_are_the_same_either_way(vectorize):
    ds = Dataset.range(10).map(lambda x: (x * 2, x.float() / 2)).batch(4)
    if not vectorize:
        ds = ds.with_options(no_vectorization())
    assert values(ds) == [([0, 2, 4, 6], [0.0, 0.5, 1.0, 1.5]), ([8, 10, 12, 14], [2.0, 2.5, 3.0, 3.5]),
                          ([16, 18], [4.0, 4.5])]


def test_map_changing_structure_is_an_error():
    ds = Dataset.range(4).map(lambda x: x if int(x) < 2 else (x, x))
    it = iter(ds)
    assert values(it, 2) == [0, 1]
    with pytest.raises(InvalidArgumentError, match="structure or dtypes differ"):
        next(it)
    dtype_change = Dataset.range(4).map(lambda x: x if int(x) < 1 else x.float())
    with pytest.raises(InvalidArgumentError, match="structure or dtypes differ"):
        list(dtype_change)


def test_map_exception_type_traceback_and_continuation():
    def boom(x):
        if int(x) == 2:
            raise ZeroDivisionError("element two")
        return x

    it = iter(Dataset.range(4).map(boom))
    assert values(it, 2) == [0, 1]
    with pytest.raises(ZeroDivisionError, match="element two") as info:
        next(it)
    assert any(entry.name == "boom" for entry in info.traceback)
    assert values(it) == [3]


def test_map_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        Dataset.range(3).map(3)
    with pytest.raises(InvalidArgumentError, match="num_parallel_calls"):
        Dataset.range(3).map(lambda x: x, num_parallel_calls=0)
    with pytest.raises(TypeError, match="deterministic"):
        Dataset.range(3).map(lambda x: x, deterministic="yes")


def test_map_restores_inline_and_vectorized():
    assert_restores(lambda: Dataset.range(20).map(lambda x: x * 3))
    assert_restores(lambda: Dataset.range(40).map(lambda x: x * 3).batch(6), positions=(0, 1, 4))
    assert_restores(lambda: Dataset.range(40).map(lambda x: x * 3).batch(6).with_options(no_vectorization()),
                    positions=(0, 2))


def test_parallel_map_uses_threads_in_order(force_threads):
    make = lambda: Dataset.range(50).map(lambda x: x * x, num_parallel_calls=AUTOTUNE)
    assert values(make()) == [i * i for i in range(50)]
    assert_restores(make, positions=(0, 1, 4, 7))


def test_parallel_map_exception_at_its_element(force_threads):
    def boom(x):
        if int(x) == 5:
            raise ValueError("five")
        return x

    it = iter(Dataset.range(9).map(boom, num_parallel_calls=2))
    assert values(it, 5) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="five"):
        next(it)
    assert values(it) == [6, 7, 8]


def test_parallel_map_saved_with_pending_results(force_threads):
    it = iter(Dataset.range(30).map(lambda x: x + 1, num_parallel_calls=AUTOTUNE))
    assert values(it, 4) == [1, 2, 3, 4]
    state = it.state_dict()
    assert state["pipeline"]["out"], "the parallel map should have results computed ahead"
    fresh = iter(Dataset.range(30).map(lambda x: x + 1, num_parallel_calls=AUTOTUNE))
    fresh.load_state_dict(state)
    assert values(fresh) == list(range(5, 31))
    it.close()


def test_parallel_map_goes_back_inline_when_threads_do_not_pay(force_threads, monkeypatch):
    from distribute.data.ops import _parallel

    monkeypatch.setattr(_parallel.POLICY, "review_fills", 2)
    monkeypatch.setattr(_parallel.POLICY, "keep_ratio", 0.0)
    it = iter(Dataset.range(40).map(lambda x: x * 2, num_parallel_calls=2))
    assert values(it, 12) == [2 * i for i in range(12)]
    assert it._impl._pool is None, "the threads should have been stopped"
    assert values(it) == [2 * i for i in range(12, 40)]
