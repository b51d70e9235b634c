"""Dataset.rejection_resample: resamples elements towards a target class distribution.

tf.data's method: with ``p`` the initial class distribution (given, or estimated from the
classes seen so far, starting from 10 of each) and ``t`` the target, ``r = t / p``;
an element comes from the input as is with probability ``m = min(r)`` and otherwise from a
second pass over the input that accepts class ``i`` with probability
``(r_i - m) / (max(r) - m)``. The result is ``(class, element)`` pairs; it ends when either
pass ends. Random numbers are our own stream; a ``seed`` makes them reproducible.

State: both passes' states, the class counts of the estimate, the random stream position.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from distribute.data import _structure
from distribute.data._common import END, check_callable, check_int, user_stop_error
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, mix
from distribute.data.ops._probe import first_element_spec, probe_spec
from distribute.data.ops.sample import stream_seed
from distribute.data.ops.shuffle import RandomStream
from distribute.errors import InvalidArgumentError

__all__ = ["RejectionResampleDataset"]

_SCALE = float(1 << 62)
_TINY = torch.finfo(torch.float32).tiny
_SMOOTHING = 10


def _distribution(name: str, value: Any) -> List[float]:
    values = value.tolist() if isinstance(value, torch.Tensor) else list(value)
    if not values or any(not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 for v in values):
        raise InvalidArgumentError(f"Expected `{name}` to be a non-empty list of probabilities >= 0; "
                                   f"received {name}={values!r}.")
    return [float(v) for v in values]


class _ResampleIterator(IteratorImpl):
    op = "rejection_resample"

    def __init__(self, dataset: "RejectionResampleDataset", ctx: IterContext) -> None:
        self._dataset = dataset
        self._original = dataset._input_dataset._make_iterator(ctx.derive(0))
        self._filtered = dataset._input_dataset._make_iterator(ctx.derive(1))
        self._seed = stream_seed(dataset.seed, False, ctx, mix(0x4E5A))
        self._rng = RandomStream(self._seed)
        self._counts = [_SMOOTHING] * len(dataset.target_dist)

    def _uniform(self) -> float:
        return self._rng.draw(1)[0] / _SCALE

    def _ratios(self) -> List[float]:
        initial = self._dataset.initial_dist
        if initial is None:
            total = sum(self._counts)
            initial = [c / total for c in self._counts]
        return [t / (p + _TINY) for t, p in zip(self._dataset.target_dist, initial)]

    def _classify(self, element: Any) -> Any:
        n = len(self._dataset.target_dist)
        value = self._dataset._class_of(element)
        if not 0 <= int(value) < n:
            raise InvalidArgumentError(f"`class_func` returned {int(value)}, outside [0, {n}) "
                                       f"(len(target_dist)={n}).")
        if self._dataset.initial_dist is None:
            self._counts[int(value)] += 1
        return value

    def next(self) -> Any:
        ratios = self._ratios()
        low, high = min(ratios), max(ratios)
        if low >= 1.0 or self._uniform() < low:
            element = self._original.next()
            return END if element is END else (self._classify(element), element)
        while True:
            element = self._filtered.next()
            if element is END:
                return END
            value = self._classify(element)
            ratios = self._ratios()
            low, high = min(ratios), max(ratios)
            accept = 1.0 if high == low else (ratios[int(value)] - low) / (high - low)
            if self._uniform() < accept:
                return value, element

    def _state(self) -> Dict[str, Any]:
        return {"original": self._original.get_state(), "filtered": self._filtered.get_state(),
                "counts": list(self._counts), "seed": self._seed, "drawn": self._rng.drawn}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._original.set_state(state["original"])
        self._filtered.set_state(state["filtered"])
        self._counts = [int(c) for c in state["counts"]]
        self._seed = int(state["seed"])
        self._rng = RandomStream(self._seed, int(state["drawn"]))

    def close(self) -> None:
        self._original.close()
        self._filtered.close()


class RejectionResampleDataset(UnaryDataset):
    """``ds.rejection_resample(class_func, target_dist, initial_dist, seed)``."""

    _op = "rejection_resample"
    _runs_python = True

    def __init__(self, input_dataset: Dataset, class_func: Any, target_dist: Any,
                 initial_dist: Any = None, seed: Optional[int] = None, name: Optional[str] = None) -> None:
        self.class_func = check_callable("class_func", class_func)
        self.target_dist = _distribution("target_dist", target_dist)
        self.initial_dist = None if initial_dist is None else _distribution("initial_dist", initial_dist)
        if self.initial_dist is not None and len(self.initial_dist) != len(self.target_dist):
            raise InvalidArgumentError(
                f"Expected `initial_dist` and `target_dist` to have the same length; received "
                f"len(initial_dist)={len(self.initial_dist)}, len(target_dist)={len(self.target_dist)}.")
        self.seed = None if seed is None else check_int("seed", seed)
        super().__init__(input_dataset, name)

    def _class_of(self, element: Any) -> torch.Tensor:
        try:
            value = _structure.call(self.class_func, element)
        except StopIteration as exc:
            raise user_stop_error(exc, "class_func") from exc
        value = _structure.normalize(value, "class_func's result")
        if not isinstance(value, torch.Tensor) or value.dim() != 0 or value.is_floating_point():
            raise InvalidArgumentError(f"`class_func` must return a scalar integer; it returned {value!r:.100}.")
        return value

    def _compute_element_spec(self) -> Any:
        def pair(element: Any) -> Any:
            return _structure.spec_of((self._class_of(element), element))
        return probe_spec(pair, self._input_dataset.element_spec, lambda: first_element_spec(self))

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _ResampleIterator(self, ctx)
