"""Dataset.random and Dataset.counter: infinite sources.

``random`` yields int64 scalars from our reproducible stream (``shuffle.RandomStream``:
uniform in [0, 2**62), not tf.data's numbers); its state is how many were drawn.
``counter`` is ``start, start + step, ...``, a random-access source like ``range``.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import torch

from distribute._base.tensor_spec import TensorSpec, as_dtype
from distribute.data._common import INFINITE_CARDINALITY, check_bool, check_int
from distribute.data.dataset import Dataset
from distribute.data.iterator import IterContext, IteratorImpl, mix
from distribute.data.ops._random_access import RandomAccess
from distribute.data.ops.range import _RangeAccess
from distribute.data.ops.sample import stream_seed
from distribute.data.ops.shuffle import RandomStream

__all__ = ["CounterDataset", "RandomDataset"]


class _RandomIterator(IteratorImpl):
    op = "random"

    def __init__(self, dataset: "RandomDataset", ctx: IterContext) -> None:
        self._seed = stream_seed(dataset.seed, dataset.rerandomize_each_iteration, ctx, mix(0x7A4D))
        self._rng = RandomStream(self._seed)

    def next(self) -> Any:
        return torch.tensor(self._rng.draw(1)[0], dtype=torch.int64)

    def _state(self) -> Dict[str, Any]:
        return {"seed": self._seed, "drawn": self._rng.drawn}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._seed = int(state["seed"])
        self._rng = RandomStream(self._seed, int(state["drawn"]))


class RandomDataset(Dataset):
    """``Dataset.random(seed, rerandomize_each_iteration)``; attributes of the same names."""

    _op = "random"

    def __init__(self, seed: Optional[int] = None, rerandomize_each_iteration: Optional[bool] = None,
                 name: Optional[str] = None) -> None:
        self.seed = None if seed is None else check_int("seed", seed)
        self.rerandomize_each_iteration = bool(check_bool(
            "rerandomize_each_iteration", rerandomize_each_iteration, allow_none=True))
        super().__init__(name)

    def _compute_element_spec(self) -> Any:
        return TensorSpec((), torch.int64)

    def _cardinality(self) -> int:
        return INFINITE_CARDINALITY

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _RandomIterator(self, ctx)


class CounterDataset(Dataset):
    """``Dataset.counter(start, step, dtype)``; attributes ``start``, ``step``, ``dtype``."""

    _op = "counter"

    def __init__(self, start: int = 0, step: int = 1, dtype: Any = torch.int64,
                 name: Optional[str] = None) -> None:
        self.start, self.step = check_int("start", start), check_int("step", step)
        self.dtype = as_dtype(dtype)
        if not isinstance(self.dtype, torch.dtype) or self.dtype == torch.bool:
            raise TypeError(f"Expected `dtype` to be a numeric dtype; received dtype={dtype!r}.")
        super().__init__(name)

    def _compute_element_spec(self) -> Any:
        return TensorSpec((), self.dtype)

    def _cardinality(self) -> int:
        return INFINITE_CARDINALITY

    def _build_random_access(self) -> RandomAccess:
        return _RangeAccess(self.start, self.step, None, self.dtype)
