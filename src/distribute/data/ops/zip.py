"""Dataset.zip: elements of several datasets side by side (``tf.data.Dataset.zip``).

The datasets may be passed as arguments or as any nested structure (tuple, dict); each element
has that structure. Iteration ends with the shortest input. When every input is random
access, so is the zip (``zip(from_tensor_slices(x), from_tensor_slices(y)).batch(b)`` slices).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from distribute._base import nest
from distribute.data._common import END, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from distribute.data.dataset import Dataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops._random_access import RandomAccess

__all__ = ["ZipDataset"]


class _ZipAccess(RandomAccess):
    def __init__(self, structure: Any, parts: List[RandomAccess]) -> None:
        lengths = [p.length for p in parts if p.length is not None]
        self.length = min(lengths) if lengths else None
        self.returns_views = any(p.returns_views for p in parts)
        self._structure, self._parts = structure, parts

    def rows(self, start: int, stop: int) -> Any:
        return nest.pack_sequence_as(self._structure, [p.rows(start, stop) for p in self._parts])

    def gather(self, index: torch.Tensor) -> Any:
        return nest.pack_sequence_as(self._structure, [p.gather(index) for p in self._parts])

    def elements(self, start: int, stop: int) -> List[Any]:
        columns = [p.elements(start, stop) for p in self._parts]
        return [nest.pack_sequence_as(self._structure, list(row)) for row in zip(*columns)]


class _ZipIterator(IteratorImpl):
    op = "zip"

    def __init__(self, dataset: "ZipDataset", ctx: IterContext) -> None:
        self._structure = dataset.datasets
        self._iterators = [d._make_iterator(ctx.derive(i)) for i, d in enumerate(dataset._inputs())]

    def next(self) -> Any:
        values = []
        for it in self._iterators:
            value = it.next()
            if value is END:
                return END
            values.append(value)
        return nest.pack_sequence_as(self._structure, values)

    def _state(self) -> Dict[str, Any]:
        return {"inputs": [it.get_state() for it in self._iterators]}

    def _restore(self, state: Dict[str, Any]) -> None:
        for it, sub in zip(self._iterators, state["inputs"]):
            it.set_state(sub)

    def close(self) -> None:
        for it in self._iterators:
            it.close()


def _zip_cardinality(values: List[int]) -> int:
    if any(v == UNKNOWN_CARDINALITY for v in values):
        return UNKNOWN_CARDINALITY
    finite = [v for v in values if v >= 0]
    return min(finite) if finite else INFINITE_CARDINALITY


class ZipDataset(Dataset):
    """``Dataset.zip(datasets)``; the structure of inputs is the attribute ``datasets``."""

    _op = "zip"

    def __init__(self, datasets: Any, name: Optional[str] = None) -> None:
        flat = nest.flatten(datasets)
        if not flat or not all(isinstance(d, Dataset) for d in flat):
            raise TypeError(
                f"Dataset.zip expects Datasets, as arguments or in a nested structure (tuple or "
                f"dict); received {datasets!r:.300}."
            )
        self.datasets = datasets
        super().__init__(name)

    def _inputs(self) -> Tuple[Dataset, ...]:
        return tuple(nest.flatten(self.datasets))

    def _set_inputs(self, inputs: Tuple[Dataset, ...]) -> None:
        self.datasets = nest.pack_sequence_as(self.datasets, list(inputs))

    def _compute_element_spec(self) -> Any:
        return nest.pack_sequence_as(self.datasets, [d.element_spec for d in self._inputs()])

    def _cardinality(self) -> int:
        return _zip_cardinality([d.cardinality() for d in self._inputs()])

    def _static_batch_size(self) -> int:
        sizes = {d._static_batch_size() for d in self._inputs()}
        return sizes.pop() if len(sizes) == 1 else -1

    def _build_random_access(self) -> Optional[RandomAccess]:
        parts = [d._random_access() for d in self._inputs()]
        if any(p is None for p in parts):
            return None
        return _ZipAccess(self.datasets, parts)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _ZipIterator(self, ctx)
