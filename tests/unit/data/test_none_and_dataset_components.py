"""None components and datasets as elements pass through the pipeline as in tf.data (its
batch, unbatch, from_tensors and from_tensor_slices tests)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distribute import TensorSpec
from distribute.data import Dataset, DatasetSpec, Iterator, NoneTensorSpec
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import assert_restores, plain, values


# ------------------------------------------------------------------ None components
def test_none_component_through_map_and_batch():
    ds = Dataset.range(10).map(lambda x: (x, None)).batch(10)
    assert ds.element_spec == (TensorSpec((None,), torch.int64), NoneTensorSpec())
    (x, none), = list(ds)
    assert x.tolist() == list(range(10)) and none is None
    assert values(ds.map(lambda x, y: x)) == [list(range(10))]


def test_none_component_through_unbatch():
    ds = Dataset.from_tensors((torch.arange(10), None)).unbatch()
    assert ds.element_spec == (TensorSpec((), torch.int64), NoneTensorSpec())
    assert ds.cardinality() == 10
    assert values(ds.map(lambda x, y: x)) == list(range(10))
    assert all(y is None for _, y in ds)


def test_none_component_in_dict_and_slices():
    ds = Dataset.from_tensor_slices({"a": torch.arange(3), "b": None})
    assert [plain(e) for e in ds] == [{"a": 0, "b": None}, {"a": 1, "b": None}, {"a": 2, "b": None}]
    assert plain(next(iter(ds.batch(2)))) == {"a": [0, 1], "b": None}


def test_none_component_state_roundtrip():
    assert_restores(lambda: Dataset.range(9).map(lambda x: (x, None)).shuffle(4, seed=1).batch(2))


def test_none_component_in_padded_batch():
    ds = Dataset.range(1, 4).map(lambda x: (torch.ones(int(x)), None)).padded_batch(3)
    x, none = next(iter(ds))
    assert x.shape == (3, 3) and none is None


def test_all_none_element_cannot_be_unbatched():
    with pytest.raises(InvalidArgumentError, match="None"):
        list(Dataset.range(2).map(lambda x: (None,)).batch(2).unbatch())


# ------------------------------------------------------------------ datasets as elements
def test_from_tensors_of_a_dataset():
    inner = Dataset.range(10)
    ds = Dataset.from_tensors(inner)
    assert ds.element_spec == DatasetSpec(inner.element_spec)
    assert values(ds.flat_map(lambda x: x)) == list(range(10))


def test_from_tensor_slices_of_datasets():
    ds = Dataset.from_tensor_slices([Dataset.range(10) for _ in range(10)])
    assert ds.cardinality() == 10
    assert ds.element_spec == DatasetSpec(TensorSpec((), torch.int64))
    assert values(ds.flat_map(lambda x: x)) == list(range(10)) * 10


def test_nested_datasets():
    ds = Dataset.from_tensors(Dataset.from_tensors(Dataset.range(3)))
    assert values(ds.flat_map(lambda x: x).flat_map(lambda x: x)) == [0, 1, 2]


def test_batch_and_unbatch_of_datasets():
    ds = Dataset.range(5).map(lambda x: Dataset.range(x))
    batched = ds.batch(2)
    assert batched.element_spec == DatasetSpec(TensorSpec((), torch.int64), (None,))
    batches = list(batched)
    assert [b.shape for b in batches] == [(2,), (2,), (1,)]
    assert all(isinstance(b, np.ndarray) for b in batches)
    flat = batched.unbatch().flat_map(lambda d: d)
    assert values(flat) == [0, 0, 1, 0, 1, 2, 0, 1, 2, 3]


def test_dataset_beside_a_tensor():
    ds = Dataset.range(3).map(lambda x: (x, Dataset.range(x).map(lambda y: y * 10)))
    out = [(int(x), values(d)) for x, d in ds]
    assert out == [(0, []), (1, [0]), (2, [0, 10])]


def test_dataset_element_cannot_be_saved_in_a_state():
    ds = Dataset.from_tensors(Dataset.range(3)).flat_map(lambda x: x)
    with Iterator(ds) as it:
        next(it)
        with pytest.raises(InvalidArgumentError, match="Dataset, which is not plain data"):
            it.state_dict()


def test_padded_batch_refuses_dataset_components():
    with pytest.raises(InvalidArgumentError, match="use batch"):
        Dataset.from_tensors(Dataset.range(3)).padded_batch(2)
