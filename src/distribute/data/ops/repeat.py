"""Dataset.repeat: the input, ``count`` times (forever for None or -1).

Each epoch is a new iterator of the input, made with the epoch number in its salt, so a
``shuffle`` upstream reshuffles every epoch (``reshuffle_each_iteration``) and a restored
iterator reproduces the same epochs. An input that yields nothing ends the repetition
instead of looping forever.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from distribute.data._common import END, INFINITE_CARDINALITY
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops._random_access import RandomAccess
from distribute.data.ops.take import check_count

__all__ = ["RepeatDataset"]


class _RepeatAccess(RandomAccess):
    def __init__(self, inner: RandomAccess, count: int, epoch_length: int) -> None:
        """``epoch_length`` is ``inner.length`` (the input must be finite and not empty)."""
        self._inner, self._n = inner, epoch_length
        self.returns_views = inner.returns_views
        self.length = None if count == -1 else epoch_length * count

    def rows(self, start: int, stop: int) -> Any:
        epoch = start // self._n
        if (stop - 1) // self._n == epoch:
            offset = epoch * self._n
            return self._inner.rows(start - offset, stop - offset)
        return self.gather(torch.arange(start, stop, dtype=torch.int64))

    def gather(self, index: torch.Tensor) -> Any:
        return self._inner.gather(index % self._n)

    def elements(self, start: int, stop: int) -> List[Any]:
        out: List[Any] = []
        while start < stop:
            offset = (start // self._n) * self._n
            end = min(stop, offset + self._n)
            out += self._inner.elements(start - offset, end - offset)
            start = end
        return out


class _RepeatIterator(IteratorImpl):
    op = "repeat"

    def __init__(self, dataset: "RepeatDataset", ctx: IterContext) -> None:
        self._dataset, self._ctx, self._count = dataset._input_dataset, ctx, dataset.count
        self._epoch = 0
        self._produced = False  # whether the current epoch yielded anything
        self._input: Optional[IteratorImpl] = self._open(0) if self._count != 0 else None
        self.fast_rows = self._input is not None and self._input.fast_rows

    def _open(self, epoch: int) -> IteratorImpl:
        return self._dataset._make_iterator(self._ctx if epoch == 0 else self._ctx.derive(epoch))

    def _next_epoch(self, finished_input: IteratorImpl) -> bool:
        """Closes ``finished_input`` (this epoch's) and moves to the next epoch; False when the
        repetition is over."""
        finished_input.close()
        finished = self._epoch + 1 == self._count or not self._produced
        self._epoch += 1
        self._produced = False
        self._input = None if finished else self._open(self._epoch)
        return not finished

    def next(self) -> Any:
        while self._input is not None:
            value = self._input.next()
            if value is not END:
                self._produced = True
                return value
            self._next_epoch(self._input)
        return END

    def next_rows(self, n: int) -> Any:
        while self._input is not None:
            rows = self._input.next_rows(n)
            if rows is not END:
                self._produced = True
                return rows
            self._next_epoch(self._input)
        return END

    def _state(self) -> Dict[str, Any]:
        return {
            "epoch": self._epoch, "produced": self._produced,
            "input": None if self._input is None else self._input.get_state(),
        }

    def _restore(self, state: Dict[str, Any]) -> None:
        self.close()
        self._epoch, self._produced = int(state["epoch"]), bool(state["produced"])
        if state["input"] is not None:
            self._input = self._open(self._epoch)
            self._input.set_state(state["input"])

    def close(self) -> None:
        if self._input is not None:
            self._input.close()
            self._input = None


class RepeatDataset(UnaryDataset):
    """``ds.repeat(count)``; attribute ``count`` (-1 for forever)."""

    _op = "repeat"
    _batch_size_passthrough = True

    def __init__(self, input_dataset: Dataset, count: Optional[int] = None,
                 name: Optional[str] = None) -> None:
        self.count = -1 if count is None else check_count("repeat", count)
        super().__init__(input_dataset, name)

    def _cardinality(self) -> int:
        n = self._input_dataset.cardinality()
        if self.count == 0 or n == 0:
            return 0
        if self.count == -1:
            return INFINITE_CARDINALITY
        if n < 0:
            return n
        return n * self.count

    def _build_random_access(self) -> Optional[RandomAccess]:
        inner = self._input_dataset._random_access()
        if inner is None or inner.length is None or inner.length == 0 or self.count == 0:
            return None
        return _RepeatAccess(inner, self.count, inner.length)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _RepeatIterator(self, ctx)
