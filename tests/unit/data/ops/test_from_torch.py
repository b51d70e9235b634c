import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset

from .._helpers import assert_restores, values


class Squares(torch.utils.data.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return {"x": i * i, "y": float(i)}


def test_map_style_dataset_is_a_source():
    ds = Dataset.from_torch_dataset(Squares())
    assert ds.cardinality() == 6
    assert ds.element_spec == {"x": TensorSpec((), torch.int64), "y": TensorSpec((), torch.float32)}
    assert values(ds.batch(4)) == [{"x": [0, 1, 4, 9], "y": [0.0, 1.0, 2.0, 3.0]}, {"x": [16, 25], "y": [4.0, 5.0]}]
    assert values(ds.shard(2, 1).map(lambda e: e["x"])) == [1, 9, 25]


def test_tensor_dataset_is_sliced():
    tds = torch.utils.data.TensorDataset(torch.arange(10), torch.arange(10) * 2)
    ds = Dataset.from_torch_dataset(tds)
    assert values(ds.skip(8)) == [(8, 16), (9, 18)]
    assert values(ds.batch(4))[2] == ([8, 9], [16, 18])


def test_shuffled_torch_dataset_restores():
    assert_restores(lambda: Dataset.from_torch_dataset(Squares()).shuffle(4, seed=3).batch(2), positions=(0, 1, 2))
    tds = torch.utils.data.TensorDataset(torch.arange(20))
    assert_restores(lambda: Dataset.from_torch_dataset(tds).shuffle(20, seed=1))


def test_not_a_map_style_dataset():
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter([1])

    with pytest.raises(TypeError, match="map-style"):
        Dataset.from_torch_dataset(Stream())
    with pytest.raises(TypeError, match="map-style"):
        Dataset.from_torch_dataset(42)
