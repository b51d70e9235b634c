"""TensorSpec: the shape and dtype a tensor is expected to have.

A dimension of ``None`` is unknown; a ``shape`` of ``None`` means the rank is unknown too.
Used by ``distribute.function`` input signatures and by ``Dataset.element_spec``.

torch has no string tensors, so the input pipeline represents a string scalar as ``bytes``
and a string tensor as a numpy array of ``bytes`` objects (``dtype=object``); their spec has
the dtype :data:`string`.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import torch

__all__ = ["TensorSpec", "as_dtype", "string"]

Shape = Optional[Tuple[Optional[int], ...]]



class StringDType:
    """The dtype of string values (``bytes`` scalars, numpy arrays of ``bytes``)."""

    _instance: Optional["StringDType"] = None

    def __new__(cls) -> "StringDType":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "distribute.string"

    def __reduce__(self) -> str:
        return "string"


string = StringDType()
"""The string dtype (``tf.string``): elements are ``bytes``, string tensors numpy ``bytes`` arrays."""

DType = Union[torch.dtype, StringDType]

_STRING_NAMES = ("string", "str", "bytes", "tf.string")

_DTYPE_NAMES = {
    "float16": torch.float16, "half": torch.float16, "bfloat16": torch.bfloat16,
    "float32": torch.float32, "float": torch.float32, "float64": torch.float64,
    "double": torch.float64, "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "bool": torch.bool,
    "complex64": torch.complex64, "complex128": torch.complex128,
}


def as_dtype(dtype: Any) -> DType:
    """Converts a torch dtype, numpy dtype, Python type or name ('int64') to a torch dtype.

    ``str``, ``bytes``, ``"string"`` and numpy string dtypes give :data:`string`.
    """
    if isinstance(dtype, (torch.dtype, StringDType)):
        return dtype
    if dtype in (str, bytes) or (isinstance(dtype, str) and dtype in _STRING_NAMES):
        return string
    if dtype is float:
        return torch.float32
    if dtype is int:
        return torch.int64
    if dtype is bool:
        return torch.bool
    if isinstance(dtype, str) and dtype.replace("torch.", "") in _DTYPE_NAMES:
        return _DTYPE_NAMES[dtype.replace("torch.", "")]
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name in _DTYPE_NAMES:
        return _DTYPE_NAMES[name]
    if name is not None and np.dtype(dtype).kind in "SUO":
        return string
    raise TypeError(
        f"Expected a dtype (a torch.dtype, numpy dtype or a name such as 'float32'), "
        f"received {dtype!r}."
    )


def _as_shape(shape: Union[None, int, Sequence[Optional[int]], torch.Size]) -> Shape:
    if shape is None:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    dims = []
    for dim in shape:
        if dim is not None and (not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim < -1):
            raise TypeError(
                f"Expected each dimension of `shape` to be a non-negative int or None, "
                f"received shape={tuple(shape)!r}."
            )
        dims.append(None if dim is None or dim == -1 else int(dim))
    return tuple(dims)


def _dims_compatible(a: Shape, b: Shape) -> bool:
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a, b))


class TensorSpec:
    """Describes a tensor: its shape (``None`` for unknown dimensions) and dtype.

    Example:
        >>> spec = TensorSpec(shape=(None, 3), dtype=torch.float32)
        >>> spec.is_compatible_with(torch.zeros(5, 3))
        True
    """

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape: Any = None, dtype: Any = torch.float32, name: Optional[str] = None) -> None:
        self._shape = _as_shape(shape)
        self._dtype = as_dtype(dtype)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Expected `name` to be a str or None, received {name!r}.")
        self._name = name

    @classmethod
    def from_tensor(cls, tensor: Any, name: Optional[str] = None) -> "TensorSpec":
        """The fully known spec of a tensor (numpy arrays and numbers are converted).

        ``bytes`` and ``str`` give a scalar :data:`string` spec, numpy string or object
        arrays a :data:`string` spec of their shape.
        """
        if isinstance(tensor, (bytes, str)):
            return cls((), string, name)
        if isinstance(tensor, np.ndarray) and tensor.dtype.kind in "SUO":
            return cls(tensor.shape, string, name)
        if not isinstance(tensor, torch.Tensor):
            tensor = torch.as_tensor(tensor)
        return cls(tuple(tensor.shape), tensor.dtype, name)

    @property
    def shape(self) -> Shape:
        """The shape as a tuple whose unknown dimensions are ``None``; ``None`` if rank is unknown."""
        return self._shape

    @property
    def dtype(self) -> DType:
        """The torch dtype, or :data:`string`."""
        return self._dtype

    @property
    def name(self) -> Optional[str]:
        """The optional name."""
        return self._name

    @property
    def rank(self) -> Optional[int]:
        """The number of dimensions, or ``None`` when unknown."""
        return None if self._shape is None else len(self._shape)

    def is_fully_defined(self) -> bool:
        """True when the rank and every dimension are known."""
        return self._shape is not None and all(d is not None for d in self._shape)

    def is_compatible_with(self, other: Any) -> bool:
        """True if ``other`` (a spec or a tensor) could be described by this spec."""
        if not isinstance(other, TensorSpec):
            if not isinstance(other, (torch.Tensor, bytes, np.ndarray)):
                return False
            other = TensorSpec.from_tensor(other)
        return self._dtype == other._dtype and _dims_compatible(self._shape, other._shape)

    def most_specific_compatible_type(self, other: "TensorSpec") -> "TensorSpec":
        """The narrowest spec compatible with both: differing dimensions become ``None``."""
        if self._dtype != other._dtype:
            raise ValueError(
                f"No TensorSpec is compatible with both dtypes: {self._dtype} and {other._dtype}."
            )
        if self._shape is None or other._shape is None or len(self._shape) != len(other._shape):
            return TensorSpec(None, self._dtype, self._name)
        dims = tuple(a if a == b else None for a, b in zip(self._shape, other._shape))
        return TensorSpec(dims, self._dtype, self._name)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TensorSpec)
            and self._shape == other._shape
            and self._dtype == other._dtype
            and self._name == other._name
        )

    def __hash__(self) -> int:
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype}, name={self._name!r})"

    def __reduce__(self) -> tuple:
        return (TensorSpec, (self._shape, self._dtype, self._name))
