"""Dataset.from_torch_dataset: a map-style ``torch.utils.data.Dataset`` as a source.

Items are read in index order and converted like any user value (numbers and numpy arrays
become tensors). The source is random access, so ``shuffle``, ``shard``, ``skip`` and friends
work on indices. A ``torch.utils.data.TensorDataset`` is read by slicing its tensors (the
bulk path); a dataset with ``__getitems__`` is asked for whole batches at once.
"""

from __future__ import annotations

from typing import Any, List, Optional

import torch

from distribute.data import _structure
from distribute.data._common import user_stop_error
from distribute.data.dataset import Dataset
from distribute.data.ops._random_access import RandomAccess
from distribute.errors import InvalidArgumentError

__all__ = ["TorchDataset"]


class _TorchAccess(RandomAccess):
    def __init__(self, dataset: Any, length: int) -> None:
        self.length = length
        self._dataset = dataset
        self._batched = hasattr(dataset, "__getitems__")

    def _items(self, indices: List[int]) -> List[Any]:
        try:
            return self._read(indices)
        except StopIteration as exc:
            raise user_stop_error(exc, "torch dataset's __getitem__") from exc

    def _read(self, indices: List[int]) -> List[Any]:
        if self._batched:
            items = self._dataset.__getitems__(indices)
        else:
            items = [self._dataset[i] for i in indices]
        return [_structure.normalize(item, "an item of the torch dataset") for item in items]

    def elements(self, start: int, stop: int) -> List[Any]:
        return self._items(list(range(start, stop)))

    def rows(self, start: int, stop: int) -> Any:
        items = self.elements(start, stop)
        return _structure.batch_elements(items, _structure.Structure(items[0]))

    def gather(self, index: torch.Tensor) -> Any:
        items = self._items(index.tolist())
        return _structure.batch_elements(items, _structure.Structure(items[0]))


class _TensorDatasetAccess(RandomAccess):
    returns_views = True

    def __init__(self, tensors: tuple) -> None:
        self.length = len(tensors[0]) if tensors else 0
        self._tensors = tuple(tensors)

    def rows(self, start: int, stop: int) -> Any:
        return tuple(t[start:stop] for t in self._tensors)

    def gather(self, index: torch.Tensor) -> Any:
        return tuple(t.index_select(0, index) for t in self._tensors)


class TorchDataset(Dataset):
    """``Dataset.from_torch_dataset(dataset)``; the source is the attribute ``dataset``."""

    _op = "from_torch_dataset"

    def __init__(self, dataset: Any, name: Optional[str] = None) -> None:
        if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__getitem__"):
            raise TypeError(
                f"Expected a map-style torch.utils.data.Dataset (with __getitem__ and __len__); "
                f"received {type(dataset).__name__}. For an iterable dataset use "
                f"Dataset.from_generator(lambda: iter(dataset), output_signature=...)."
            )
        try:
            self._length = len(dataset)
        except TypeError:
            raise TypeError(
                f"The torch dataset {type(dataset).__name__} has no __len__; a map-style source "
                f"needs its length. Use Dataset.from_generator for datasets without one."
            ) from None
        self.dataset = dataset
        super().__init__(name)
        # a user __getitem__ is Python code (a TensorDataset is read by slicing)
        self._runs_python = type(dataset) is not torch.utils.data.TensorDataset

    def _compute_element_spec(self) -> Any:
        if self._length == 0:
            raise InvalidArgumentError(
                "The torch dataset is empty, so its element_spec cannot be inferred from an item."
            )
        ra = self._random_access()
        return _structure.spec_of(ra.elements(0, 1)[0])

    def _cardinality(self) -> int:
        return self._length

    def _build_random_access(self) -> RandomAccess:
        if type(self.dataset) is torch.utils.data.TensorDataset:
            return _TensorDatasetAccess(self.dataset.tensors)
        return _TorchAccess(self.dataset, self._length)
