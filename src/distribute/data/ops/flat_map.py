"""Dataset.flat_map: maps each element to a dataset and concatenates them in order.

It is an interleave with one open dataset at a time (``cycle_length=1``).
"""

from __future__ import annotations

from typing import Callable, Optional

from distribute.data.dataset import Dataset
from distribute.data.ops.interleave import InterleaveDataset

__all__ = ["FlatMapDataset"]


class FlatMapDataset(InterleaveDataset):
    """``ds.flat_map(map_func)``; attribute ``map_func``."""

    _op = "flat_map"

    def __init__(self, input_dataset: Dataset, map_func: Callable[..., Dataset],
                 name: Optional[str] = None) -> None:
        super().__init__(input_dataset, map_func, cycle_length=1, block_length=1, name=name)
