"""Dataset.shard: every ``num_shards``-th element starting at ``index`` (``tf.data`` shard).

``shard(SHARD_HINT, SHARD_HINT)`` is a placeholder: distributed input with
``AutoShardPolicy.HINT`` rebuilds the node with ``(number of workers, worker index)``.
Iterating a placeholder that was never filled in raises InvalidArgumentError.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from distribute.data import _structure
from distribute.data._common import (
    END, INFINITE_CARDINALITY, SHARD_HINT, UNKNOWN_CARDINALITY, check_int,
)
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._random_access import RandomAccess
from distribute.errors import InvalidArgumentError

__all__ = ["ShardDataset"]


class _ShardAccess(RandomAccess):
    def __init__(self, inner: RandomAccess, num_shards: int, index: int) -> None:
        self._inner, self._num, self._index = inner, num_shards, index
        self.returns_views = inner.returns_views
        if inner.length is None:
            self.length = None
        else:
            self.length = max(inner.length - index + num_shards - 1, 0) // num_shards

    def gather(self, index: torch.Tensor) -> Any:
        return self._inner.gather(index * self._num + self._index)

    def elements(self, start: int, stop: int) -> List[Any]:
        if self._num == 1:
            return self._inner.elements(start, stop)
        rows = self.gather(torch.arange(start, stop, dtype=torch.int64))
        return _structure.unstack(rows, _structure.Structure(rows))


class _ShardIterator(UnaryIteratorImpl):
    op = "shard"

    def __init__(self, dataset: "ShardDataset", ctx: IterContext) -> None:
        dataset._check_filled_in()
        super().__init__(dataset, ctx)
        self._num, self._index = dataset.num_shards, dataset.index
        self._position = 0  # input elements consumed
        self.fast_rows = self._input.fast_rows

    def next(self) -> Any:
        while True:
            value = self._input.next()
            if value is END:
                return END
            self._position += 1
            if (self._position - 1) % self._num == self._index:
                return value

    def next_rows(self, n: int) -> Any:
        while True:
            rows = self._input.next_rows(n * self._num)
            if rows is END:
                return END
            count = _structure.num_rows(rows)
            first = (self._index - self._position) % self._num
            self._position += count
            if first < count:
                keep = torch.arange(first, count, self._num, dtype=torch.int64)
                return _structure.index_rows(rows, keep)

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "position": self._position}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._position = int(state["position"])
        super()._restore(state)


class ShardDataset(UnaryDataset):
    """``ds.shard(num_shards, index)``; attributes ``num_shards`` and ``index``."""

    _op = "shard"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, num_shards: int, index: int,
                 name: Optional[str] = None) -> None:
        self.num_shards = check_int("num_shards", num_shards)
        self.index = check_int("index", index)
        if not self.is_placeholder:
            _check_shard(self.num_shards, self.index)
        super().__init__(input_dataset, name)

    @property
    def is_placeholder(self) -> bool:
        """True for ``shard(SHARD_HINT, SHARD_HINT)``, which distributed input fills in."""
        return self.num_shards == SHARD_HINT and self.index == SHARD_HINT

    def _check_filled_in(self) -> None:
        if self.is_placeholder:
            raise InvalidArgumentError(
                "shard(SHARD_HINT, SHARD_HINT) is a placeholder for (number of workers, worker "
                "index); it is filled in only by distributed input with AutoShardPolicy.HINT. "
                "Distribute the dataset with that policy, or pass real values to shard()."
            )

    def _cardinality(self) -> int:
        n = self._input_dataset.cardinality()
        if self.is_placeholder:
            return UNKNOWN_CARDINALITY if n != INFINITE_CARDINALITY else n
        if n < 0:
            return n
        return n // self.num_shards + (1 if self.index < n % self.num_shards else 0)

    def _build_random_access(self) -> Optional[RandomAccess]:
        inner = self._input_dataset._random_access()
        if inner is None or self.is_placeholder:
            return None
        return _ShardAccess(inner, self.num_shards, self.index)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _ShardIterator(self, ctx)


def _check_shard(num_shards: int, index: int) -> None:
    if num_shards <= 0:
        raise InvalidArgumentError(
            f"Expected `num_shards` to be a positive int (or SHARD_HINT together with index="
            f"SHARD_HINT); received num_shards={num_shards}."
        )
    if not 0 <= index < num_shards:
        raise InvalidArgumentError(
            f"Expected `index` to be in [0, num_shards - 1] = [0, {num_shards - 1}]; received "
            f"index={index}. Pass the worker index, from 0 to num_shards - 1."
        )
