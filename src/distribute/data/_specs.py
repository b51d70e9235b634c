"""Specs of the components that are not tensors: ``None`` and datasets.

``NoneTensorSpec`` describes a ``None`` component (tf.data passes them through ``map``,
``batch`` and ``unbatch``); ``DatasetSpec`` describes a component that is a dataset
(``Dataset.from_tensors(ds)``), or, with a ``shape``, an array of datasets (a batch of
them: ``from_tensor_slices([ds1, ds2])``, ``batch`` of dataset elements), kept as a numpy
array of ``Dataset`` objects. The helpers add or remove the batch dimension of any leaf spec.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from distribute._base.tensor_spec import TensorSpec
from distribute.errors import InvalidArgumentError

__all__ = ["DatasetSpec", "NoneTensorSpec", "add_batch_dim", "is_tensor_spec", "row_spec"]


class NoneTensorSpec:
    """The spec of a ``None`` component (``tf.NoneTensorSpec``)."""

    __slots__ = ()
    shape = None  # no dimensions to speak of; code that reads shapes skips these specs

    def is_compatible_with(self, other: Any) -> bool:
        """True for another NoneTensorSpec or None."""
        return other is None or isinstance(other, NoneTensorSpec)

    def most_specific_compatible_type(self, other: Any) -> "NoneTensorSpec":
        """Itself, if ``other`` is a NoneTensorSpec too."""
        if not isinstance(other, NoneTensorSpec):
            raise TypeError(f"NoneTensorSpec() is not compatible with {other!r}.")
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoneTensorSpec)

    def __hash__(self) -> int:
        return hash("NoneTensorSpec")

    def __repr__(self) -> str:
        return "NoneTensorSpec()"


class DatasetSpec:
    """The spec of a dataset component (``tf.data.DatasetSpec``): its elements' spec and the
    shape of the array of datasets (``()`` for one dataset)."""

    __slots__ = ("element_spec", "shape")

    def __init__(self, element_spec: Any, dataset_shape: Tuple[Optional[int], ...] = ()) -> None:
        self.element_spec = element_spec
        self.shape = tuple(dataset_shape)

    def is_compatible_with(self, other: Any) -> bool:
        """True for a DatasetSpec of the same elements and a compatible shape."""
        return (isinstance(other, DatasetSpec) and other.element_spec == self.element_spec
                and len(other.shape) == len(self.shape)
                and all(a is None or b is None or a == b for a, b in zip(self.shape, other.shape)))

    def most_specific_compatible_type(self, other: Any) -> "DatasetSpec":
        """The spec both fit: dimensions that differ become None."""
        if not self.is_compatible_with(other):
            raise TypeError(f"{self!r} is not compatible with {other!r}.")
        return DatasetSpec(self.element_spec,
                           tuple(a if a == b else None for a, b in zip(self.shape, other.shape)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DatasetSpec) and other.element_spec == self.element_spec
                and other.shape == self.shape)

    def __hash__(self) -> int:
        return hash(("DatasetSpec", self.shape))

    def __repr__(self) -> str:
        return f"DatasetSpec({self.element_spec!r}, shape={self.shape})"


def is_tensor_spec(spec: Any) -> bool:
    """True for a TensorSpec (a tensor or string component)."""
    return isinstance(spec, TensorSpec)


def add_batch_dim(spec: Any, dim: Optional[int]) -> Any:
    """The spec of ``dim`` stacked components of spec ``spec``."""
    if isinstance(spec, NoneTensorSpec):
        return spec
    if isinstance(spec, DatasetSpec):
        return DatasetSpec(spec.element_spec, (dim,) + spec.shape)
    return TensorSpec(None if spec.shape is None else (dim,) + spec.shape, spec.dtype)


def row_spec(spec: Any, what: str) -> Any:
    """The spec of one row of a component of spec ``spec``; ``what`` names the operation."""
    if isinstance(spec, NoneTensorSpec):
        return spec
    if spec.shape is not None and not spec.shape:
        raise InvalidArgumentError(
            f"{what} needs every component to have a first dimension; one component has "
            f"spec {spec}. Batch or reshape it first, or leave it out of the element."
        )
    if isinstance(spec, DatasetSpec):
        return DatasetSpec(spec.element_spec, spec.shape[1:])
    return TensorSpec(None if spec.shape is None else spec.shape[1:], spec.dtype)
