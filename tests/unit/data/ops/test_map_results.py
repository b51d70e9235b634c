"""map: a returned list is a tuple of components, and a result that cannot be an element is
refused when the dataset is built (tf.data's map tests)."""

from __future__ import annotations

import pytest
import torch

from distribute.data import Dataset, Iterator
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import no_vectorization, plain


class Foo:
    """A class, not a value."""


@pytest.mark.parametrize("vectorize", [True, False])
def test_list_result_is_a_tuple_of_components(vectorize):
    ds = Dataset.range(3).map(lambda x: [x, 37.0])
    if not vectorize:
        ds = ds.with_options(no_vectorization())
    assert isinstance(ds.element_spec, tuple) and len(ds.element_spec) == 2
    assert ds.element_spec[0].dtype == torch.int64 and ds.element_spec[1].dtype == torch.float32
    assert [plain(e) for e in ds] == [(0, 37.0), (1, 37.0), (2, 37.0)]
    batched = ds.batch(3)
    assert plain(next(iter(batched))) == ([0, 1, 2], [37.0, 37.0, 37.0])


def test_list_of_tensors_of_different_shapes():
    ds = Dataset.range(2).map(lambda x: [torch.zeros(int(x) + 1), x])
    assert [plain(e) for e in ds] == [([0.0], 0), ([0.0, 0.0], 1)]


def test_nested_lists_stay_values():
    ds = Dataset.range(2).map(lambda x: ([x, x],))
    assert [plain(e) for e in ds] == [([0, 0],), ([1, 1],)]


def test_tensor_made_from_a_list_inside_the_function():
    ds = Dataset.range(2).map(lambda x: torch.stack([x, x]))
    assert [plain(e) for e in ds] == [[0, 0], [1, 1]]


def test_returning_a_class_fails_when_built():
    with pytest.raises(TypeError, match="Unsupported return value"):
        Dataset.from_tensors(torch.tensor([1.0, 2.0, 3.0])).map(lambda x: Foo)


def test_returning_an_object_fails_when_built():
    with pytest.raises(TypeError, match="Unsupported return value"):
        Dataset.range(3).map(lambda x: (x, object()))


def test_function_that_needs_real_input_is_checked_at_its_element():
    # it cannot run on the placeholder b"1": nothing is read at build time
    ds = Dataset.from_tensor_slices([b"a,b"]).map(lambda s: Foo if s.split(b",")[1] else s)
    with Iterator(ds) as it, pytest.raises(TypeError):
        next(it)


def test_building_reads_no_input():
    seen = []

    def parse(s):  # fails on the placeholder b"1": its spec comes from the first real element
        seen.append(bytes(s))
        return torch.tensor(int(s.split(b",")[1]))

    ds = Dataset.from_tensor_slices([b"a,7", b"b,8"]).map(parse).map(lambda x: x + 1)
    assert set(seen) == {b"1"}  # placeholder calls only: no element was read to build it
    assert [plain(e) for e in ds] == [8, 9]


def test_structure_change_between_elements_still_raises():
    ds = Dataset.range(3).map(lambda x: x if int(x) < 1 else (x, x))
    with pytest.raises(InvalidArgumentError):
        list(ds.with_options(no_vectorization()))
