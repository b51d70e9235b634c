"""A dataset over a Python list of elements: the windows of ``window`` and ``group_by_window``.

tf.data hands those windows to user functions as datasets; here each is an
:class:`ElementsDataset`, a random-access source over the elements it holds. Its elements
are plain data, so an iterator state that holds a window (an open ``flat_map`` slot over
``window``, the group a ``group_by_window`` reducer is reading) can be saved: the elements
are encoded and the window rebuilt on restore.
"""

from __future__ import annotations

from typing import Any, List, Optional

import torch

from distribute.data import _structure
from distribute.data.dataset import Dataset
from distribute.data.ops._random_access import RandomAccess

__all__ = ["ElementsDataset", "component_windows"]


class _ElementsAccess(RandomAccess):
    def __init__(self, elements: List[Any]) -> None:
        self._elements = elements
        self.length = len(elements)

    def elements(self, start: int, stop: int) -> List[Any]:
        return list(self._elements[start:stop])

    def rows(self, start: int, stop: int) -> Any:
        chunk = self._elements[start:stop]
        return _structure.batch_elements(chunk, _structure.Structure(chunk[0]))

    def gather(self, index: torch.Tensor) -> Any:
        chunk = [self._elements[i] for i in index.tolist()]
        return _structure.batch_elements(chunk, _structure.Structure(chunk[0]))


class ElementsDataset(Dataset):
    """The elements of a list, in order, described by ``spec`` (attribute ``elements``)."""

    _op = "elements"

    def __init__(self, elements: List[Any], spec: Any, name: Optional[str] = None) -> None:
        self.elements = list(elements)
        self._spec = spec
        super().__init__(name)

    def _compute_element_spec(self) -> Any:
        return self._spec

    def _cardinality(self) -> int:
        return len(self.elements)

    def _build_random_access(self) -> RandomAccess:
        return _ElementsAccess(self.elements)


def component_windows(elements: List[Any], spec: Any) -> Any:
    """tf.data's window element: for each component of ``spec``, a dataset of its values."""
    structure = _structure.Structure(spec)
    columns = list(zip(*(structure.flatten(e) for e in elements))) if elements else []
    specs = structure.flatten(spec)
    if not columns:
        columns = [()] * len(specs)
    return structure.pack([ElementsDataset(list(c), s) for c, s in zip(columns, specs)])


_structure.register_savable_dataset(ElementsDataset, ElementsDataset)
