"""The input hooks of every strategy: how datasets become distributed datasets.

``Strategy.experimental_distribute_dataset``, ``distribute_datasets_from_function``,
``make_dataset_iterator`` and ``make_input_fn_iterator`` (in ``_core``) call the hooks that
:class:`InputExtended` implements here, in the strategies layer, because they build on
``distribute.distributed_input``, which sits above ``_core``. The hooks validate the dataset
and the ``InputOptions``, then build: a strategy changes only the two ``_build_*`` methods
(the default strategy returns its input unchanged).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from distribute._core.extended import StrategyExtended
from distribute.distributed_input import api

__all__ = ["InputExtended"]


class InputExtended(StrategyExtended):
    """A ``StrategyExtended`` whose input methods build ``distribute.distributed_input`` datasets."""

    _per_replica_input_error: Optional[str] = None
    """Set by strategies that refuse ``InputReplicationMode.PER_REPLICA`` (the error text)."""

    def _experimental_distribute_dataset(self, dataset: Any, options: Any) -> Any:
        api.check_dataset(dataset)
        options = api.resolve_options(options)
        api.check_dataset_options(options)
        return self._build_distributed_dataset(dataset, options)

    def _distribute_datasets_from_function(self, dataset_fn: Callable[..., Any], options: Any) -> Any:
        options = api.resolve_options(options)
        api.check_function_options(options)
        if options.experimental_replication_mode is api.InputReplicationMode.PER_REPLICA and \
                self._per_replica_input_error is not None:
            raise NotImplementedError(self._per_replica_input_error)
        return self._build_datasets_from_function(dataset_fn, options)

    def _make_dataset_iterator(self, dataset: Any) -> Any:
        strategy = self._container_strategy()
        return api.InitializableIterator(strategy.experimental_distribute_dataset(dataset))

    def _make_input_fn_iterator(self, input_fn: Callable[..., Any], replication_mode: Any) -> Any:
        api.check_replication_mode(api.InputReplicationMode.PER_WORKER if replication_mode is None
                                   else replication_mode)
        return api.make_input_fn_iterator(self._container_strategy(), input_fn)

    def _build_distributed_dataset(self, dataset: Any, options: Any) -> Any:
        """The distributed dataset of the validated ``dataset`` of global batches."""
        return api.distribute_dataset(self._container_strategy(), dataset, options)

    def _build_datasets_from_function(self, dataset_fn: Callable[..., Any], options: Any) -> Any:
        """The distributed dataset of the per-replica batches ``dataset_fn`` makes."""
        return api.distribute_datasets_from_function(self._container_strategy(), dataset_fn, options)
