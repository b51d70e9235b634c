"""A StopIteration raised by user code is an error, never the end of the data (tf.data:
InvalidArgumentError), in every transformation that runs user code."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

from distribute.data import Dataset, Iterator
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import no_vectorization


def _stop_at(k: int) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        if int(x) == k:
            raise StopIteration("user bug")
        return x
    return fn


def _keep_stop_at(k: int) -> Callable[[Any], Any]:
    stop = _stop_at(k)
    return lambda x: (stop(x), True)[1]


def _flat_stop_at(k: int) -> Callable[[Any], Any]:
    stop = _stop_at(k)
    return lambda x: Dataset.from_tensors(stop(x))


PIPELINES = {
    "map": lambda: Dataset.range(5).map(_stop_at(2)),
    "map_parallel": lambda: Dataset.range(5).map(_stop_at(2), num_parallel_calls=2),
    "map_batched": lambda: Dataset.range(5).map(_stop_at(2)).batch(5),
    "map_unvectorized_batch": lambda: Dataset.range(5).map(_stop_at(2)).batch(5).with_options(no_vectorization()),
    "filter": lambda: Dataset.range(5).filter(_keep_stop_at(2)),
    "flat_map": lambda: Dataset.range(5).flat_map(_flat_stop_at(2)),
    "interleave": lambda: Dataset.range(5).interleave(_flat_stop_at(2), cycle_length=1),
    "map_prefetch": lambda: Dataset.range(5).map(_stop_at(2)).prefetch(2),
}


def _first_error(dataset: Dataset) -> tuple:
    """The elements before the error, and the error (None if the loop ended normally)."""
    seen = []
    with Iterator(dataset) as it:
        try:
            for element in it:
                seen.append(element)
        except InvalidArgumentError as exc:
            return seen, exc
    return seen, None


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_stop_iteration_in_user_function_is_an_error(name):
    seen, error = _first_error(PIPELINES[name]())
    assert error is not None, f"{name}: the loop ended quietly after {seen}"
    assert "StopIteration" in str(error)
    assert isinstance(error.__cause__, StopIteration)


def test_the_error_comes_at_the_element_and_iteration_continues():
    # tf.data: elements before the failing one, then the error, then the next elements
    with Iterator(Dataset.range(5).map(_stop_at(2))) as it:
        assert [int(next(it)), int(next(it))] == [0, 1]
        with pytest.raises(InvalidArgumentError, match="map function raised StopIteration"):
            next(it)
        assert [int(x) for x in it] == [3, 4]


def test_generator_callable_raising_stop_iteration():
    def generator():
        raise StopIteration

    ds = Dataset.from_generator(generator, output_types=torch.int64)
    with pytest.raises(InvalidArgumentError, match="generator"):
        list(ds)


def test_generator_function_raising_stop_iteration_is_not_the_end():
    def generator():
        yield 1
        raise StopIteration  # PEP 479: a RuntimeError, still not the end of the data

    ds = Dataset.from_generator(generator, output_types=torch.int64)
    with pytest.raises(RuntimeError):
        list(ds)


def test_torch_dataset_getitem_raising_stop_iteration():
    class Items(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> torch.Tensor:
            if i == 2:
                raise StopIteration
            return torch.tensor(i)

    with pytest.raises(InvalidArgumentError, match="__getitem__"):
        list(Dataset.from_torch_dataset(Items()))


def test_get_next_and_optional_raise_too():
    def always(x):
        raise StopIteration

    with Iterator(Dataset.range(3).map(always)) as it:
        with pytest.raises(InvalidArgumentError):
            it.get_next()
        with pytest.raises(InvalidArgumentError):
            it.get_next_as_optional()


def test_reduce_func_raising_stop_iteration():
    def fold(state, x):
        if int(x) == 3:
            raise StopIteration
        return state + x

    with pytest.raises(InvalidArgumentError, match="reduce_func"):
        Dataset.range(5).reduce(torch.tensor(0), fold)


def test_other_user_exceptions_keep_their_type():
    def fail(x):
        raise KeyError("boom")

    with pytest.raises(KeyError):
        list(Dataset.range(3).map(fail))
