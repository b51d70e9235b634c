"""Shared by the nodes that pick elements from several datasets (sample, choose)."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec
from distribute.data._common import END
from distribute.data.dataset import Dataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops._probe import merge_specs

__all__ = ["Inputs", "check_datasets", "common_spec"]


def check_datasets(datasets: Any) -> Tuple[Dataset, ...]:
    """``datasets`` as a non-empty tuple of Datasets (tf.data's errors otherwise)."""
    if isinstance(datasets, Dataset) or not isinstance(datasets, (list, tuple)):
        raise TypeError(
            f"Invalid `datasets`. Expected a non-empty list of Dataset objects; received "
            f"{type(datasets).__name__}."
        )
    if not datasets:
        raise ValueError("Invalid `datasets`. `datasets` should not be empty.")
    for i, d in enumerate(datasets):
        if not isinstance(d, Dataset):
            raise TypeError(
                f"Invalid `datasets`. Expected a list of Dataset objects; datasets[{i}] is a "
                f"{type(d).__name__}."
            )
    return tuple(datasets)


def _leaf_kind(spec: Any) -> Any:
    return (type(spec), spec.dtype) if isinstance(spec, TensorSpec) else type(spec)


def common_spec(datasets: Sequence[Dataset]) -> Any:
    """The element_spec all ``datasets`` fit (dimensions that differ unknown), or TypeError."""
    specs = [d.element_spec for d in datasets]
    merged = specs[0]
    for spec in specs[1:]:
        try:
            compatible = nest.same_structure(merged, spec) and all(
                _leaf_kind(a) == _leaf_kind(b) for a, b in zip(nest.flatten(merged), nest.flatten(spec)))
        except (TypeError, ValueError):
            compatible = False
        if not compatible:
            listing = "\n".join(f"Dataset {i} element_spec={s}." for i, s in enumerate(specs))
            raise TypeError(f"Invalid `datasets`. `datasets` must have compatible element specs.\n{listing}")
        merged = merge_specs(merged, spec)
    return merged


class Inputs:
    """The iterators of several input datasets, each with its own salt; exhausted ones closed."""

    def __init__(self, datasets: Sequence[Dataset], ctx: IterContext) -> None:
        self.iterators: List[IteratorImpl] = [d._make_iterator(ctx.derive(i)) for i, d in enumerate(datasets)]
        self.active = [True] * len(datasets)

    def next_from(self, index: int) -> Any:
        """The next element of input ``index`` (END, and marked inactive, at its end)."""
        if not self.active[index]:
            return END
        value = self.iterators[index].next()
        if value is END:
            self.active[index] = False
        return value

    def state(self) -> Dict[str, Any]:
        return {"active": list(self.active), "inputs": [it.get_state() for it in self.iterators]}

    def restore(self, state: Dict[str, Any]) -> None:
        self.active = [bool(a) for a in state["active"]]
        for it, saved in zip(self.iterators, state["inputs"]):
            it.set_state(saved)

    def close(self) -> None:
        for it in self.iterators:
            it.close()
