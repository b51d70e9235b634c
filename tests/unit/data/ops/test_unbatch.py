import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def test_unbatch_values_and_cardinality_match_tf():
    assert values(Dataset.from_tensor_slices([[1, 2], [3, 4]]).unbatch()) == [1, 2, 3, 4]
    assert Dataset.from_tensor_slices([[1, 2], [3, 4]]).unbatch().cardinality() == 4
    assert Dataset.range(10).batch(2).unbatch().cardinality() == -2
    assert Dataset.range(10).batch(2, drop_remainder=True).unbatch().cardinality() == 10
    assert Dataset.range(10).batch(3).unbatch().element_spec == TensorSpec((), torch.int64)


def test_unbatch_rebatch_and_structures():
    ds = Dataset.zip(Dataset.range(7), Dataset.range(7).map(lambda x: -x)).batch(3).unbatch().batch(2)
    assert values(ds) == [([0, 1], [0, -1]), ([2, 3], [-2, -3]), ([4, 5], [-4, -5]), ([6], [-6])]
    assert values(Dataset.from_tensor_slices(["ab", "c"]).batch(2).unbatch()) == [b"ab", b"c"]


def test_unbatch_of_scalars_is_an_error():
    with pytest.raises(InvalidArgumentError, match="first dimension"):
        Dataset.range(3).unbatch()


def test_unbatch_restores_mid_batch():
    assert_restores(lambda: Dataset.range(20).batch(6).unbatch(), positions=(0, 1, 4, 6, 7))
    assert_restores(lambda: Dataset.range(20).map(lambda x: torch.stack([x, x])).batch(3).unbatch().batch(4),
                    positions=(0, 1, 2))
