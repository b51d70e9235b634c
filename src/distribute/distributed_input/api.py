"""The entry points strategies call for their input methods (validation and construction).

``Strategy.experimental_distribute_dataset``, ``distribute_datasets_from_function``,
``make_dataset_iterator`` and ``make_input_fn_iterator`` call their strategy's input hooks
(:mod:`distribute.strategies.input_hooks`), which validate the arguments with the ``check_*``
functions here and build the distributed dataset with :func:`distribute_dataset` or
:func:`distribute_datasets_from_function`.
"""

from __future__ import annotations

from typing import Any, Callable

from distribute.distributed_input.distributed_dataset import (DistributedDatasetsFromFunction,
                                                              RebatchedDistributedDataset)
from distribute.distributed_input.input_options import (InputOptions, InputReplicationMode,
                                                        check_function_options, resolve_options)
from distribute.distributed_input.sources import check_input
from distribute.distributed_input.v1 import InitializableIterator, make_input_fn_iterator

__all__ = ["InitializableIterator", "InputReplicationMode", "check_dataset", "check_dataset_options",
           "check_function_options", "check_replication_mode", "distribute_dataset",
           "distribute_datasets_from_function", "make_input_fn_iterator", "resolve_options"]


def check_dataset(dataset: Any) -> None:
    """Raises unless ``dataset`` is a ``distribute.data.Dataset`` or an iterable of batches."""
    check_input(dataset)


def check_dataset_options(options: InputOptions) -> None:
    """The options ``experimental_distribute_dataset`` accepts (not PER_REPLICA)."""
    if options.experimental_replication_mode is InputReplicationMode.PER_REPLICA:
        raise NotImplementedError(
            "InputReplicationMode.PER_REPLICA is only supported in `distribute_datasets_from_function`.")


def check_replication_mode(replication_mode: Any) -> None:
    """``make_input_fn_iterator`` supports PER_WORKER only."""
    if replication_mode is not InputReplicationMode.PER_WORKER:
        raise ValueError(f"Input replication mode not supported: {replication_mode!r}")


def distribute_dataset(strategy: Any, dataset: Any, options: InputOptions) -> RebatchedDistributedDataset:
    """The distributed dataset of global batches ``dataset`` over ``strategy``'s replicas."""
    return RebatchedDistributedDataset(strategy, dataset, options)


def distribute_datasets_from_function(strategy: Any, dataset_fn: Callable[..., Any],
                                      options: InputOptions) -> DistributedDatasetsFromFunction:
    """The distributed dataset of per-replica batches made by ``dataset_fn``."""
    return DistributedDatasetsFromFunction(strategy, dataset_fn, options)
