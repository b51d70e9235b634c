"""``distribute.data.experimental``: the names of ``tf.data.experimental``.

The transformations are functions returning a ``Dataset -> Dataset`` function for
``dataset.apply(...)``, as in tf.data; each is the ``Dataset`` method of the same name.
``choose_from_datasets`` keeps tf.data.experimental's default ``stop_on_empty_dataset=False``
(the ``Dataset`` method's default is True).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import torch

from distribute.data._common import AUTOTUNE, INFINITE_CARDINALITY, SHARD_HINT, UNKNOWN_CARDINALITY
from distribute.data.options import AutoShardPolicy, DistributeOptions

__all__ = [
    "AUTOTUNE",
    "AutoShardPolicy",
    "Counter",
    "DistributeOptions",
    "INFINITE_CARDINALITY",
    "RandomDataset",
    "SHARD_HINT",
    "UNKNOWN_CARDINALITY",
    "bucket_by_sequence_length",
    "cardinality",
    "choose_from_datasets",
    "enumerate_dataset",
    "get_single_element",
    "group_by_window",
    "ignore_errors",
    "load",
    "rejection_resample",
    "sample_from_datasets",
    "save",
    "scan",
    "snapshot",
    "take_while",
    "unbatch",
    "unique",
]

Transformation = Callable[[Any], Any]


def _dataset() -> Any:
    from distribute.data.dataset import Dataset

    return Dataset


def Counter(start: int = 0, step: int = 1, dtype: Any = torch.int64) -> Any:  # noqa: N802  (tf's name)
    """``tf.data.experimental.Counter``: ``Dataset.counter(start, step, dtype)``."""
    return _dataset().counter(start, step, dtype)


def RandomDataset(seed: Optional[int] = None, rerandomize_each_iteration: Optional[bool] = None,  # noqa: N802
                  name: Optional[str] = None) -> Any:
    """``tf.data.experimental.RandomDataset``: ``Dataset.random(seed, ...)``."""
    return _dataset().random(seed, rerandomize_each_iteration, name)


def choose_from_datasets(datasets: Sequence[Any], choice_dataset: Any,
                         stop_on_empty_dataset: bool = False) -> Any:
    """``Dataset.choose_from_datasets`` with tf.data.experimental's default (do not stop)."""
    return _dataset().choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)


def sample_from_datasets(datasets: Sequence[Any], weights: Any = None, seed: Optional[int] = None,
                         stop_on_empty_dataset: bool = False) -> Any:
    """``Dataset.sample_from_datasets``."""
    return _dataset().sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


def cardinality(dataset: Any) -> int:
    """``dataset.cardinality()``."""
    return dataset.cardinality()


def get_single_element(dataset: Any) -> Any:
    """``dataset.get_single_element()``."""
    return dataset.get_single_element()


def bucket_by_sequence_length(element_length_func: Callable[..., Any], bucket_boundaries: Sequence[int],
                              bucket_batch_sizes: Sequence[int], padded_shapes: Any = None,
                              padding_values: Any = None, pad_to_bucket_boundary: bool = False,
                              no_padding: bool = False, drop_remainder: bool = False) -> Transformation:
    """For ``apply``: ``Dataset.bucket_by_sequence_length``."""
    return lambda ds: ds.bucket_by_sequence_length(
        element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes, padding_values,
        pad_to_bucket_boundary, no_padding, drop_remainder)


def group_by_window(key_func: Callable[..., Any], reduce_func: Callable[..., Any],
                    window_size: Optional[int] = None,
                    window_size_func: Optional[Callable[[Any], Any]] = None) -> Transformation:
    """For ``apply``: ``Dataset.group_by_window``."""
    return lambda ds: ds.group_by_window(key_func, reduce_func, window_size, window_size_func)


def rejection_resample(class_func: Callable[..., Any], target_dist: Any, initial_dist: Any = None,
                       seed: Optional[int] = None) -> Transformation:
    """For ``apply``: ``Dataset.rejection_resample``."""
    return lambda ds: ds.rejection_resample(class_func, target_dist, initial_dist, seed)


def scan(initial_state: Any, scan_func: Callable[[Any, Any], Any]) -> Transformation:
    """For ``apply``: ``Dataset.scan``."""
    return lambda ds: ds.scan(initial_state, scan_func)


def take_while(predicate: Callable[..., Any]) -> Transformation:
    """For ``apply``: ``Dataset.take_while``."""
    return lambda ds: ds.take_while(predicate)


def unique() -> Transformation:
    """For ``apply``: ``Dataset.unique``."""
    return lambda ds: ds.unique()


def ignore_errors(log_warning: bool = False) -> Transformation:
    """For ``apply``: ``Dataset.ignore_errors``."""
    return lambda ds: ds.ignore_errors(log_warning)


def unbatch() -> Transformation:
    """For ``apply``: ``Dataset.unbatch``."""
    return lambda ds: ds.unbatch()


def enumerate_dataset(start: int = 0) -> Transformation:
    """For ``apply``: ``Dataset.enumerate``."""
    return lambda ds: ds.enumerate(start)


def save(dataset: Any, path: Any, compression: Any = None, shard_func: Optional[Callable[..., Any]] = None,
         checkpoint_args: Any = None) -> None:
    """``dataset.save(path, ...)``."""
    dataset.save(path, compression, shard_func, checkpoint_args)


def load(path: Any, element_spec: Any = None, compression: Any = None,
         reader_func: Optional[Callable[[Any], Any]] = None, wait: bool = False) -> Any:
    """``Dataset.load(path, ...)``."""
    return _dataset().load(path, element_spec, compression, reader_func, wait)


def snapshot(path: Any, compression: Any = "AUTO", reader_func: Optional[Callable[[Any], Any]] = None,
             shard_func: Optional[Callable[..., Any]] = None) -> Transformation:
    """For ``apply``: ``Dataset.snapshot``."""
    return lambda ds: ds.snapshot(path, compression, reader_func, shard_func)
