"""Distributed datasets: what ``experimental_distribute_dataset`` and
``distribute_datasets_from_function`` return.

* :class:`RebatchedDistributedDataset` takes a dataset of **global** batches, rewrites it for
  the auto-shard policy (:mod:`~distribute.distributed_input.auto_shard`), and splits every
  global batch into per-replica batches (:mod:`~distribute.distributed_input.rebatch`).
* :class:`DistributedDatasetsFromFunction` calls ``dataset_fn(InputContext)`` once per worker
  (or once per replica with ``InputReplicationMode.PER_REPLICA``); its batches are already
  per-replica batches, dealt to the worker's replicas in turn. No sharding, no rebatching.

Both can be iterated any number of times, report ``element_spec`` and ``cardinality`` (the
number of batches of the input dataset, or INFINITE/UNKNOWN), and give
:class:`~distribute.distributed_input.distributed_iterator.StepIterator` iterators.
"""

from __future__ import annotations

import abc
import random
from typing import Any, Callable, List, Optional, Tuple

from distribute._base import nest
from distribute._core.replica_context import InputContext
from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset, INFINITE_CARDINALITY
from distribute.data import _structure
from distribute.distributed_input import rebatch
from distribute.distributed_input.auto_shard import DATA, apply_auto_shard
from distribute.distributed_input.device_prefetch import DevicePlacer
from distribute.distributed_input.distributed_iterator import StepIterator
from distribute.distributed_input.element_spec import is_fully_static, per_replica_spec, replica_leaf_spec
from distribute.distributed_input.input_options import InputOptions, InputReplicationMode
from distribute.distributed_input.input_workers import InputWorkers
from distribute.distributed_input.interfaces import DistributedDataset
from distribute.distributed_input.sources import (check_input, input_cardinality, make_input, normalize_batch,
                                                  random_generator)

__all__ = ["DistributedDatasetsFromFunction", "RebatchedDistributedDataset"]

_WHOLE = "whole"
_UNSET = object()


def _peek_spec(iterable: Any) -> Any:
    """The element spec of an iterable of batches, read from its first batch (batch dim None)."""
    if iter(iterable) is iterable:
        raise TypeError(
            "The element_spec of a one-shot iterator is not known before it is iterated; pass a "
            "re-iterable input (a DataLoader, a list, a distribute.data.Dataset) to read element_spec.")
    generator = random_generator(iterable)
    state = None if generator is None else generator.get_state()
    first = next(iter(iterable), None)
    if generator is not None and state is not None:  # reading the spec must not change the next iteration's order
        generator.set_state(state)
    if first is None:
        return None

    def leaf(value: Any) -> TensorSpec:
        spec = _structure.leaf_spec(value)
        return TensorSpec((None,) + tuple(spec.shape[1:]), spec.dtype) if spec.shape else spec
    batch = normalize_batch(first)
    return nest.map_structure(leaf, batch) if nest.is_nested(batch) else leaf(batch)


class _StepDataset(DistributedDataset):
    """What both distributed datasets share: layout, options, specs and iterator assembly."""

    _cardinality: int  # the input's cardinality, set by each subclass's __init__

    def __init__(self, strategy: Any, options: InputOptions, input_workers: Optional[Tuple[int, int]],
                 seed: Optional[int]) -> None:
        self._strategy = strategy
        self._extended = strategy.extended
        self._options = options
        self._workers = InputWorkers.from_strategy(strategy, input_workers)
        self._seed = seed
        self._spec_cache: Any = _UNSET
        self._replica_cache: Any = _UNSET

    # -- subclass hooks ---------------------------------------------------------------
    @abc.abstractmethod
    def _global_spec(self) -> Any:
        """The spec of one input batch (None if unknown)."""

    @abc.abstractmethod
    def _spec_known(self) -> bool:
        """False for iterables of batches: their spec is read from a first batch only on request."""

    @abc.abstractmethod
    def _make_source(self, seed: int) -> rebatch.StepSource:
        """This worker's step source for one iteration (``seed``: the agreed shuffle seed)."""

    def _replica_divisor(self) -> int:
        """By how many replicas a batch is divided (N for global batches, 1 for per-replica ones)."""
        return 1

    def _placer(self) -> DevicePlacer:
        return DevicePlacer(self._workers.devices, self._options.experimental_fetch_to_device,
                            self._options.experimental_per_replica_buffer_size)

    # -- specs ------------------------------------------------------------------------
    @property
    def cardinality(self) -> int:
        """The number of batches of the input dataset (INFINITE -1 / UNKNOWN -2 when not finite/known)."""
        return self._cardinality

    def _replica_spec(self) -> Any:
        """One replica's element spec (None when the input's is unknown)."""
        if self._replica_cache is _UNSET:
            spec = self._global_spec()
            static = not (self._workers.num_workers > 1 and self._cardinality != INFINITE_CARDINALITY)
            divisor = self._replica_divisor()
            self._replica_cache = None if spec is None else nest.map_structure(
                lambda leaf: replica_leaf_spec(leaf, divisor, static), spec)
        return self._replica_cache

    @property
    def element_spec(self) -> Any:
        """Each leaf as a ``PerReplicaSpec`` over the local replicas (plain with one replica)."""
        if self._spec_cache is _UNSET:
            replica = self._replica_spec()
            self._spec_cache = None if replica is None else per_replica_spec([replica] * self._workers.num_local_replicas)
        return self._spec_cache

    def _partial(self, replica_spec: Any) -> bool:
        enabled = self._extended.experimental_enable_get_next_as_optional
        static = replica_spec is not None and is_fully_static(replica_spec)
        return bool(enabled) and self._cardinality != INFINITE_CARDINALITY and (
            not static or self._workers.num_workers > 1)

    def __iter__(self) -> StepIterator:
        seed = self._seed if self._seed is not None else random.getrandbits(62)
        if self._workers.num_workers > 1:
            seed = self._extended._agree_on_input_seed(seed)
        replica_spec = self._replica_spec() if self._spec_known() else None
        return StepIterator(self._make_source(seed), self._workers, lambda: self.element_spec, replica_spec,
                            self._partial(replica_spec), self._cardinality == INFINITE_CARDINALITY,
                            self._placer())


class RebatchedDistributedDataset(_StepDataset):
    """A dataset of global batches, auto-sharded and split over the replicas of a strategy.

    ``input_workers=(num_workers, worker_index)`` sets the worker layout explicitly (tests
    exercise the worker dimension in one process this way); ``seed`` fixes the seed of the
    pipeline's unseeded shuffles (by default each iteration draws one, agreed between workers).

    Example:
        >>> import distribute
        >>> from distribute.data import Dataset
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> dist = s.experimental_distribute_dataset(Dataset.range(6).batch(4))
        >>> [[t.tolist() for t in step.values] for step in dist]
        [[[0, 1], [2, 3]], [[4], [5]]]
    """

    def __init__(self, strategy: Any, dataset: Any, options: InputOptions,
                 input_workers: Optional[Tuple[int, int]] = None, seed: Optional[int] = None) -> None:
        super().__init__(strategy, options, input_workers, seed)
        check_input(dataset)
        workers = self._workers
        self._input = dataset
        self._cardinality = input_cardinality(dataset)
        if isinstance(dataset, Dataset):
            sharding = apply_auto_shard(dataset, workers.num_workers, workers.worker_index)
            self._worker_input, applied = sharding.dataset, sharding.applied
            self._check_batched(dataset.element_spec)
            batch_size = self._worker_input._static_batch_size()
        else:
            self._worker_input, applied, batch_size = dataset, DATA, -1
        self._applied = applied
        self._batch_size = batch_size
        self._algorithm = _WHOLE if workers.num_replicas_in_sync == 1 else rebatch.choose(applied, batch_size)

    def _check_batched(self, spec: Any) -> None:
        if self._workers.num_replicas_in_sync > 1 and rebatch.has_rank_zero_leaf(spec):
            raise ValueError(
                f"Invalid `dataset`: its elements have a scalar component (element_spec {spec}), so they "
                f"cannot be split over {self._workers.num_replicas_in_sync} replicas. Batch the dataset "
                "with the global batch size first: dataset.batch(global_batch_size).")

    def _spec_known(self) -> bool:
        return isinstance(self._input, Dataset)

    def _global_spec(self) -> Any:
        if isinstance(self._input, Dataset):
            return self._input.element_spec
        return _peek_spec(self._input)

    def _replica_divisor(self) -> int:
        return self._workers.num_replicas_in_sync

    def _make_source(self, seed: int) -> rebatch.StepSource:
        workers = self._workers
        batches = make_input(self._worker_input, seed)
        n, local = workers.num_replicas_in_sync, workers.num_local_replicas
        if self._algorithm == _WHOLE:
            return rebatch.DealSource(batches, local)
        if self._algorithm == rebatch.STREAM:
            sizes = rebatch.stream_sizes(self._batch_size, n, workers.num_workers, workers.worker_index)
            return rebatch.StreamSource(batches, sizes, local)
        if self._applied == DATA:
            order = [r * workers.num_workers + workers.worker_index for r in range(local)]
        else:
            order = list(range(n))
        return rebatch.SliceSource(batches, n, order, local)

    def __repr__(self) -> str:
        return f"<distribute.DistributedDataset over {self._input!r}, {self._workers!r}>"


class DistributedDatasetsFromFunction(_StepDataset):
    """Per-replica batches from ``dataset_fn(InputContext)``, one pipeline per worker or replica.

    Example:
        >>> import distribute
        >>> from distribute.data import Dataset
        >>> s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
        >>> dist = s.distribute_datasets_from_function(lambda ctx: Dataset.range(10).batch(2))
        >>> [[t.tolist() for t in step.values] for step in dist][-1]
        [[8, 9], []]
    """

    def __init__(self, strategy: Any, dataset_fn: Callable[[InputContext], Any], options: InputOptions,
                 input_workers: Optional[Tuple[int, int]] = None, seed: Optional[int] = None) -> None:
        super().__init__(strategy, options, input_workers, seed)
        self._per_replica = options.experimental_replication_mode is InputReplicationMode.PER_REPLICA
        self._datasets = [self._call(dataset_fn, ctx) for ctx in self._contexts()]
        self._cardinality = input_cardinality(self._datasets[0])

    def _contexts(self) -> List[InputContext]:
        workers = self._workers
        n = workers.num_replicas_in_sync
        if self._per_replica:
            return [InputContext(n, workers.first_replica_id + r, n) for r in range(workers.num_local_replicas)]
        return [InputContext(workers.num_workers, workers.worker_index, n)]

    @staticmethod
    def _call(dataset_fn: Callable[[InputContext], Any], ctx: InputContext) -> Any:
        dataset = dataset_fn(ctx)
        check_input(dataset, "result of dataset_fn")
        return dataset

    def _spec_known(self) -> bool:
        return isinstance(self._datasets[0], Dataset)

    def _global_spec(self) -> Any:
        first = self._datasets[0]
        return first.element_spec if isinstance(first, Dataset) else _peek_spec(first)

    def _placer(self) -> DevicePlacer:
        if self._options.experimental_place_dataset_on_device:
            return DevicePlacer(self._workers.devices, True, 0)
        return super()._placer()

    def _make_source(self, seed: int) -> rebatch.StepSource:
        if self._per_replica:
            inputs = [make_input(d, seed + r) for r, d in enumerate(self._datasets)]
            return rebatch.PerReplicaSource(inputs)
        return rebatch.DealSource(make_input(self._datasets[0], seed), self._workers.num_local_replicas)

    def __repr__(self) -> str:
        return f"<distribute.DistributedDatasetsFromFunction {self._workers!r}>"
