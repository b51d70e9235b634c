import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset

from .._helpers import assert_restores, values


def test_concatenate_values_and_spec():
    ds = Dataset.range(2).concatenate(Dataset.range(5, 7))
    assert values(ds) == [0, 1, 5, 6]
    assert ds.cardinality() == 4
    mixed = Dataset.from_tensors([1, 2]).concatenate(Dataset.from_tensors([1, 2, 3]))
    assert mixed.element_spec == TensorSpec((None,), torch.int64)


def test_concatenate_cardinality_matches_tf():
    assert Dataset.range(3).concatenate(Dataset.range(3).filter(lambda x: True)).cardinality() == -2
    assert Dataset.range(3).concatenate(Dataset.range(3).repeat()).cardinality() == -1


def test_incompatible_datasets_are_rejected_at_construction():
    with pytest.raises(TypeError, match="Incompatible"):
        Dataset.range(3).concatenate(Dataset.from_tensor_slices([1.0]))
    with pytest.raises(TypeError, match="Incompatible"):
        Dataset.range(3).concatenate(Dataset.from_tensor_slices([[1], [2]]))
    with pytest.raises(TypeError, match="structures"):
        Dataset.range(3).concatenate(Dataset.zip(Dataset.range(1), Dataset.range(1)))
    with pytest.raises(TypeError, match="Dataset"):
        Dataset.range(3).concatenate([1])


def test_concatenate_bulk_shuffle_and_restore():
    make = lambda: Dataset.range(5).concatenate(Dataset.range(100, 104)).shuffle(9, seed=0).batch(4)
    assert sorted(sum(values(make()), [])) == [0, 1, 2, 3, 4, 100, 101, 102, 103]
    assert_restores(make, positions=(0, 1, 2))
    assert_restores(lambda: Dataset.range(4).filter(lambda x: x > 0).concatenate(Dataset.range(3)))
