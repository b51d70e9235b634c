import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset

from .._helpers import assert_restores, values


def test_enumerate_matches_tf():
    ds = Dataset.from_tensor_slices([7, 8]).enumerate(start=3)
    assert values(ds) == [(3, 7), (4, 8)]
    assert Dataset.range(3).enumerate().element_spec == (TensorSpec((), torch.int64), TensorSpec((), torch.int64))


def test_enumerate_batches_in_bulk_and_sequentially():
    assert values(Dataset.range(5, 10).enumerate().batch(3)) == [([0, 1, 2], [5, 6, 7]), ([3, 4], [8, 9])]
    seq = Dataset.range(10).filter(lambda x: x % 2 == 0).enumerate(1).batch(2)
    assert values(seq) == [([1, 2], [0, 2]), ([3, 4], [4, 6]), ([5], [8])]


def test_enumerate_restores():
    assert_restores(lambda: Dataset.range(10).filter(lambda x: x != 3).enumerate(100))
    assert_restores(lambda: Dataset.range(10).shuffle(4, seed=0).enumerate().batch(3), positions=(0, 1, 2))
