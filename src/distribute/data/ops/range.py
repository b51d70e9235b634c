"""Dataset.range: integers from start to stop by step, as scalar tensors (``tf.data.Dataset.range``).

A random-access source: ``range(n).batch(b)`` is one ``torch.arange`` per batch.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from distribute._base.tensor_spec import TensorSpec, as_dtype
from distribute.data._common import check_int
from distribute.data.dataset import Dataset
from distribute.data.ops._random_access import RandomAccess
from distribute.errors import InvalidArgumentError

__all__ = ["RangeDataset"]


class _RangeAccess(RandomAccess):
    def __init__(self, start: int, step: int, length: Optional[int], dtype: Any) -> None:
        self.start, self.step, self.length, self.dtype = start, step, length, dtype

    def rows(self, start: int, stop: int) -> torch.Tensor:
        first = self.start + start * self.step
        values = torch.arange(first, first + (stop - start) * self.step, self.step, dtype=torch.int64)
        return values if self.dtype == torch.int64 else values.to(self.dtype)

    def gather(self, index: torch.Tensor) -> torch.Tensor:
        values = index * self.step + self.start
        return values if self.dtype == torch.int64 else values.to(self.dtype)


def _parse_args(args: tuple) -> tuple:
    if not 1 <= len(args) <= 3:
        raise TypeError(
            f"Dataset.range takes 1 to 3 arguments (stop), (start, stop) or (start, stop, step); "
            f"received {len(args)}: {args!r}."
        )
    full = args if len(args) > 1 else (0,) + args
    values = [check_int(n, v) for n, v in zip(("start", "stop", "step"), full)]
    start, stop = values[0], values[1]
    step = values[2] if len(values) > 2 else 1
    if step == 0:
        raise InvalidArgumentError("Expected `step` of Dataset.range to be non-zero; received step=0.")
    return start, stop, step


class RangeDataset(Dataset):
    """``Dataset.range(start, stop, step)``; attributes ``start``, ``stop``, ``step``."""

    _op = "range"

    def __init__(self, *args: int, output_type: Any = torch.int64, name: Optional[str] = None) -> None:
        self.start, self.stop, self.step = _parse_args(args)
        self.output_type = as_dtype(output_type)
        if not isinstance(self.output_type, torch.dtype) or self.output_type == torch.bool:
            raise TypeError(
                f"Expected `output_type` to be a numeric dtype; received output_type={output_type!r}."
            )
        super().__init__(name)

    def _length(self) -> int:
        span = self.stop - self.start
        if (span > 0) != (self.step > 0) or span == 0:
            return 0
        return (abs(span) + abs(self.step) - 1) // abs(self.step)

    def _compute_element_spec(self) -> TensorSpec:
        return TensorSpec((), self.output_type)

    def _cardinality(self) -> int:
        return self._length()

    def _build_random_access(self) -> RandomAccess:
        return _RangeAccess(self.start, self.step, self._length(), self.output_type)
