"""Dataset.take_while: the elements up to the first one for which a predicate is false."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import torch

from distribute.data import _structure
from distribute.data._common import END, UNKNOWN_CARDINALITY, check_callable, user_stop_error
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl, UnaryIteratorImpl
from distribute.data.ops._probe import placeholder, placeholders_only
from distribute.data.ops.filter import as_bool

__all__ = ["TakeWhileDataset", "check_scalar_bool_fn"]


def check_scalar_bool_fn(fn: Callable[..., Any], input_spec: Any, what: str) -> None:
    """Raises ValueError (tf.data's) if ``fn`` returns a non-boolean on a placeholder input.

    A function that cannot run on placeholders is checked at iteration instead.
    """
    try:
        with placeholders_only(), torch.no_grad():
            out = _structure.call(fn, placeholder(input_spec, 1))
    except Exception:  # noqa: BLE001  cannot run on placeholders: checked per element
        return
    if out is True or out is False:
        return
    if isinstance(out, torch.Tensor) and out.dtype == torch.bool and out.dim() == 0:
        return
    kind = (f"a tensor of dtype {out.dtype} and shape {tuple(out.shape)}"
            if isinstance(out, torch.Tensor) else f"{type(out).__name__}")
    raise ValueError(
        f"Invalid `{what}`. `{what}` must return a scalar boolean (a bool or a torch.bool "
        f"tensor of shape ()) but it returned {kind}. Compare inside it, e.g. `lambda x: x < 4`."
    )


class _TakeWhileIterator(UnaryIteratorImpl):
    op = "take_while"

    def __init__(self, dataset: "TakeWhileDataset", ctx: IterContext) -> None:
        super().__init__(dataset, ctx)
        self._predicate = dataset.predicate
        self._done = False

    def next(self) -> Any:
        if self._done:
            return END
        element = self._input.next()
        if element is END:
            self._done = True
            return END
        try:
            keep = _structure.call(self._predicate, element)
        except StopIteration as exc:
            raise user_stop_error(exc, "take_while predicate") from exc
        if not as_bool(keep):
            self._done = True
            return END
        return element

    def _state(self) -> Dict[str, Any]:
        return {**super()._state(), "done": self._done}

    def _restore(self, state: Dict[str, Any]) -> None:
        super()._restore(state)
        self._done = bool(state["done"])


class TakeWhileDataset(UnaryDataset):
    """``ds.take_while(predicate)``; attribute ``predicate``."""

    _op = "take_while"
    _batch_size_passthrough = True
    _runs_python = True

    def __init__(self, input_dataset: Dataset, predicate: Callable[..., Any],
                 name: Optional[str] = None) -> None:
        self.predicate = check_callable("predicate", predicate)
        super().__init__(input_dataset, name)
        check_scalar_bool_fn(predicate, input_dataset.element_spec, "predicate")

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _TakeWhileIterator(self, ctx)
