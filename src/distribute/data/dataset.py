"""Dataset: an immutable graph of sources and transformations, iterated by stateful iterators.

A pipeline is built by chaining methods, each returning a new node that points at its
input(s)::

    ds = Dataset.from_tensor_slices((features, labels)).shuffle(1000, seed=0).batch(32)

Nothing runs until the dataset is iterated: ``iter(ds)`` builds one internal iterator per node
(see :mod:`distribute.data.iterator`). Nodes never change after construction, so a graph can be
walked and rewritten by another module: ``_inputs()`` gives a node's upstream datasets and
``_with_inputs(new)`` rebuilds the same node over replaced inputs; parameters are attributes
(``batch_size``, ``num_shards``, ...). One source or transformation lives in each file of
:mod:`distribute.data.ops`; this module holds the base class and the fluent methods.

Names, arguments and semantics follow ``tf.data``. Differences are listed in docs/data.md.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any, Callable, Dict, Iterator as PyIterator, Optional, Sequence, Tuple

import torch

from distribute.data import _structure
from distribute.data._more_methods import (
    InspectionMethods, MoreSources, MoreTransformations, SavingMethods,
)
from distribute.data._common import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from distribute.data.iterator import IterContext, Iterator, IteratorImpl, mix
from distribute.data.options import Options
from distribute.errors import InvalidArgumentError

__all__ = ["Dataset", "UnaryDataset"]

_UNSET = object()


class Dataset(InspectionMethods, MoreTransformations, MoreSources, SavingMethods):
    """A ``tf.data``-style dataset: a sequence of elements (nested structures of tensors).

    Example:
        >>> ds = Dataset.range(6).map(lambda x: x * 2).batch(4)
        >>> [b.tolist() for b in ds]
        [[0, 2, 4, 6], [8, 10]]
    """

    _op = "dataset"
    #: True for nodes whose elements are their input's elements, possibly fewer or reordered
    #: (used by :meth:`_static_batch_size`).
    _batch_size_passthrough = False
    #: True for file readers (their only input is a dataset of file names).
    _is_file_reader = False
    #: True for nodes that run user Python code or do I/O while iterated (map, filter,
    #: interleave, from_generator, readers, a file cache): a prefetch after them runs ahead.
    _runs_python = False

    def __init__(self, name: Optional[str] = None) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Expected `name` to be a str or None; received name={name!r}.")
        self._name = name
        self._reset_caches()

    # ----------------------------------------------------------------- graph interface
    def _inputs(self) -> Tuple["Dataset", ...]:
        """The upstream datasets of this node (empty for a source)."""
        return ()

    def _set_inputs(self, inputs: Tuple["Dataset", ...]) -> None:
        """Points this (freshly copied) node at ``inputs``."""

    def _with_inputs(self, inputs: Sequence["Dataset"]) -> "Dataset":
        """A copy of this node, with the same parameters, over ``inputs`` instead."""
        inputs = tuple(inputs)
        if len(inputs) != len(self._inputs()) or not all(isinstance(d, Dataset) for d in inputs):
            raise InvalidArgumentError(
                f"Expected {len(self._inputs())} Dataset input(s) for a {self._op!r} node; "
                f"received {inputs!r}."
            )
        clone = copy.copy(self)
        clone._set_inputs(inputs)
        clone._reset_caches()
        return clone

    def _reset_caches(self) -> None:
        self._spec_cache = _UNSET
        self._ra_cache = _UNSET
        self._iterations = itertools.count()

    def __getstate__(self) -> Dict[str, Any]:
        """Pickles the pipeline without its caches (a parameter-server worker rebuilds them)."""
        state = dict(self.__dict__)
        for cache in ("_spec_cache", "_ra_cache", "_iterations"):
            state.pop(cache, None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_caches()

    def _walk(self) -> PyIterator["Dataset"]:
        """This node and every node upstream of it, depth first."""
        yield self
        for parent in self._inputs():
            yield from parent._walk()

    def _static_batch_size(self) -> int:
        """The batch size of the nearest batch/padded_batch upstream, or -1 if unknown."""
        inputs = self._inputs()
        if self._batch_size_passthrough and len(inputs) == 1:
            return inputs[0]._static_batch_size()
        return -1

    def _function_dataset_sample(self) -> Optional["Dataset"]:
        """For interleave/flat_map: the dataset the function builds for the first input."""
        return None

    # ----------------------------------------------------------------- node interface
    def _compute_element_spec(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must compute its element_spec")

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _random_access(self) -> Any:
        """A RandomAccess view when every element can be computed from its index, else None."""
        if self._ra_cache is _UNSET:
            self._ra_cache = self._build_random_access()
        return self._ra_cache

    def _build_random_access(self) -> Any:
        return None

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        raise NotImplementedError(f"{type(self).__name__} must build an iterator")

    def _make_iterator(self, ctx: IterContext) -> IteratorImpl:
        """The internal iterator of this node (random access when possible)."""
        ra = self._random_access()
        if ra is not None:
            # local: ops/ subclass Dataset, so they import this module first
            from distribute.data.ops._random_access import RandomAccessIterator

            return RandomAccessIterator(self._op, ra)
        return self._make_sequential_iterator(ctx)

    def _next_iteration_salt(self) -> int:
        return mix(0x5EED, next(self._iterations))

    def _collect_options(self) -> Options:
        merged = Options()
        for parent in self._inputs():
            merged = merged.merge(parent._collect_options())
        return merged

    # ----------------------------------------------------------------- public properties
    @property
    def element_spec(self) -> Any:
        """The structure of :class:`~distribute.TensorSpec` of the elements (None = unknown dim)."""
        if self._spec_cache is _UNSET:
            self._spec_cache = self._compute_element_spec()
        return self._spec_cache

    def cardinality(self) -> int:
        """The number of elements, INFINITE_CARDINALITY (-1) or UNKNOWN_CARDINALITY (-2).

        Example:
            >>> Dataset.range(10).batch(3).cardinality()
            4
        """
        return self._cardinality()

    def options(self) -> Options:
        """The options set on this dataset and every dataset upstream, merged."""
        return self._collect_options()

    def __iter__(self) -> Iterator:
        return Iterator(self)

    def __len__(self) -> int:
        n = self.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite, so it has no length.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown; use cardinality() or iterate it.")
        return n

    def __repr__(self) -> str:
        spec = "<not computed>" if self._spec_cache is _UNSET else repr(self._spec_cache)
        return f"<{type(self).__name__} element_spec={spec}>"

    # ----------------------------------------------------------------- sources
    @staticmethod
    def range(*args: int, output_type: Any = torch.int64, name: Optional[str] = None) -> "Dataset":
        """``range(stop)``, ``range(start, stop)`` or ``range(start, stop, step)`` as scalars.

        Example:
            >>> [int(x) for x in Dataset.range(5, 1, -2)]
            [5, 3]
        """
        return _ops.range.RangeDataset(*args, output_type=output_type, name=name)

    @staticmethod
    def from_tensors(tensors: Any, name: Optional[str] = None) -> "Dataset":
        """A dataset of one element, ``tensors``.

        Example:
            >>> [t.tolist() for t in Dataset.from_tensors([1, 2])]
            [[1, 2]]
        """
        return _ops.from_tensors.TensorDataset(tensors, name=name)

    @staticmethod
    def from_tensor_slices(tensors: Any, name: Optional[str] = None) -> "Dataset":
        """One element per row of the first dimension of every component of ``tensors``.

        Example:
            >>> [(int(x), int(y)) for x, y in Dataset.from_tensor_slices(([1, 2], [3, 4]))]
            [(1, 3), (2, 4)]
        """
        return _ops.from_tensor_slices.TensorSliceDataset(tensors, name=name)

    @staticmethod
    def from_generator(generator: Callable[..., Any], output_types: Any = None,
                       output_shapes: Any = None, args: Any = None,
                       output_signature: Any = None, name: Optional[str] = None) -> "Dataset":
        """Elements yielded by ``generator(*args)``, checked against ``output_signature``.

        Example:
            >>> ds = Dataset.from_generator(lambda: iter([1, 2]),
            ...                             output_signature=TensorSpec((), torch.int64))
            >>> [int(x) for x in ds]
            [1, 2]
        """
        return _ops.from_generator.GeneratorDataset(
            generator, output_types, output_shapes, args, output_signature, name=name
        )

    @staticmethod
    def from_torch_dataset(dataset: Any, name: Optional[str] = None) -> "Dataset":
        """The items of a map-style ``torch.utils.data.Dataset``, in index order.

        Example:
            >>> tds = torch.utils.data.TensorDataset(torch.arange(4))
            >>> [int(x) for (x,) in Dataset.from_torch_dataset(tds)]
            [0, 1, 2, 3]
        """
        return _ops.from_torch.TorchDataset(dataset, name=name)

    @staticmethod
    def zip(*datasets: Any, name: Optional[str] = None) -> "Dataset":
        """Elements of several datasets side by side, as the structure they were passed in.

        Example:
            >>> [(int(a), int(b)) for a, b in Dataset.zip(Dataset.range(2), Dataset.range(5, 7))]
            [(0, 5), (1, 6)]
        """
        structure = datasets[0] if len(datasets) == 1 and not isinstance(datasets[0], Dataset) else datasets
        return _ops.zip.ZipDataset(structure, name=name)

    @staticmethod
    def list_files(file_pattern: Any, shuffle: Optional[bool] = None, seed: Optional[int] = None,
                   name: Optional[str] = None) -> "Dataset":
        """The file names matching a glob pattern (or list of patterns), as ``bytes``.

        Shuffled unless ``shuffle=False``. Raises InvalidArgumentError if nothing matches.

        Example:
            >>> files = Dataset.list_files("/data/train-*.tfrecord", shuffle=False)
        """
        from distribute.data.readers.list_files import list_files

        return list_files(file_pattern, shuffle=shuffle, seed=seed, name=name)

    # ----------------------------------------------------------------- transformations
    def map(self, map_func: Callable[..., Any], num_parallel_calls: Optional[int] = None,
            deterministic: Optional[bool] = None, name: Optional[str] = None) -> "Dataset":
        """Applies ``map_func`` to every element (a plain tuple is unpacked into arguments).

        Example:
            >>> [int(x) for x in Dataset.range(3).map(lambda x: x + 10)]
            [10, 11, 12]
        """
        return _ops.map.MapDataset(self, map_func, num_parallel_calls, deterministic, name=name)

    def filter(self, predicate: Callable[..., Any], name: Optional[str] = None) -> "Dataset":
        """Keeps the elements for which ``predicate`` returns a true scalar boolean.

        Example:
            >>> [int(x) for x in Dataset.range(6).filter(lambda x: x % 2 == 0)]
            [0, 2, 4]
        """
        return _ops.filter.FilterDataset(self, predicate, name=name)

    def batch(self, batch_size: int, drop_remainder: bool = False,
              num_parallel_calls: Optional[int] = None, deterministic: Optional[bool] = None,
              name: Optional[str] = None) -> "Dataset":
        """Stacks ``batch_size`` consecutive elements; the last batch may be smaller.

        Example:
            >>> [b.tolist() for b in Dataset.range(5).batch(2)]
            [[0, 1], [2, 3], [4]]
        """
        return _ops.batch.BatchDataset(
            self, batch_size, drop_remainder, num_parallel_calls, deterministic, name=name
        )

    def padded_batch(self, batch_size: int, padded_shapes: Any = None, padding_values: Any = None,
                     drop_remainder: bool = False, name: Optional[str] = None) -> "Dataset":
        """Batches elements of different shapes, padding each component to a common shape.

        Example:
            >>> ds = Dataset.range(1, 3).map(lambda x: torch.full((int(x),), int(x)))
            >>> [b.tolist() for b in ds.padded_batch(2)]
            [[[1, 0], [2, 2]]]
        """
        return _ops.padded_batch.PaddedBatchDataset(
            self, batch_size, padded_shapes, padding_values, drop_remainder, name=name
        )

    def unbatch(self, name: Optional[str] = None) -> "Dataset":
        """Splits each element into the rows of its first dimension.

        Example:
            >>> [int(x) for x in Dataset.from_tensors([[1, 2], [3, 4]]).unbatch().unbatch()]
            [1, 2, 3, 4]
        """
        return _ops.unbatch.UnbatchDataset(self, name=name)

    def shard(self, num_shards: int, index: int, name: Optional[str] = None) -> "Dataset":
        """Keeps every ``num_shards``-th element, starting at ``index``.

        ``shard(SHARD_HINT, SHARD_HINT)`` is a placeholder that distributed input replaces
        with (number of workers, worker index) under ``AutoShardPolicy.HINT``.

        Example:
            >>> [int(x) for x in Dataset.range(10).shard(3, 1)]
            [1, 4, 7]
        """
        return _ops.shard.ShardDataset(self, num_shards, index, name=name)

    def shuffle(self, buffer_size: int, seed: Optional[int] = None,
                reshuffle_each_iteration: Optional[bool] = None, name: Optional[str] = None) -> "Dataset":
        """Randomly shuffles elements through a buffer of ``buffer_size`` elements.

        With a ``seed`` the order is reproducible; with ``reshuffle_each_iteration`` (the
        default) each iteration, and each repeat epoch, uses a different order.

        Example:
            >>> sorted(int(x) for x in Dataset.range(5).shuffle(5, seed=3))
            [0, 1, 2, 3, 4]
        """
        return _ops.shuffle.ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration, name=name)

    def repeat(self, count: Optional[int] = None, name: Optional[str] = None) -> "Dataset":
        """Repeats the dataset ``count`` times (forever for None or -1).

        Example:
            >>> [int(x) for x in Dataset.range(2).repeat(2)]
            [0, 1, 0, 1]
        """
        return _ops.repeat.RepeatDataset(self, count, name=name)

    def take(self, count: int, name: Optional[str] = None) -> "Dataset":
        """The first ``count`` elements (all of them for -1).

        Example:
            >>> [int(x) for x in Dataset.range(10).take(3)]
            [0, 1, 2]
        """
        return _ops.take.TakeDataset(self, count, name=name)

    def skip(self, count: int, name: Optional[str] = None) -> "Dataset":
        """All but the first ``count`` elements (none for -1).

        Example:
            >>> [int(x) for x in Dataset.range(5).skip(3)]
            [3, 4]
        """
        return _ops.skip.SkipDataset(self, count, name=name)

    def prefetch(self, buffer_size: Optional[int] = None, name: Optional[str] = None) -> "Dataset":
        """Prepares up to ``buffer_size`` elements ahead on a background thread (AUTOTUNE or
        None: only when that pays; see docs/data.md).

        Example:
            >>> ds = Dataset.range(100).batch(10).prefetch(AUTOTUNE)
        """
        return _ops.prefetch.PrefetchDataset(self, buffer_size, name=name)

    def interleave(self, map_func: Callable[..., "Dataset"], cycle_length: Optional[int] = None,
                   block_length: Optional[int] = None, num_parallel_calls: Optional[int] = None,
                   deterministic: Optional[bool] = None, name: Optional[str] = None) -> "Dataset":
        """Maps each element to a dataset and interleaves ``cycle_length`` of them at a time.

        Example:
            >>> ds = Dataset.range(1, 4).interleave(
            ...     lambda x: Dataset.from_tensors(x).repeat(x), cycle_length=2)
            >>> [int(x) for x in ds]
            [1, 2, 3, 2, 3, 3]
        """
        return _ops.interleave.InterleaveDataset(
            self, map_func, cycle_length, block_length, num_parallel_calls, deterministic, name=name
        )

    def flat_map(self, map_func: Callable[..., "Dataset"], name: Optional[str] = None) -> "Dataset":
        """Maps each element to a dataset and concatenates them.

        Example:
            >>> [int(x) for x in Dataset.range(3).flat_map(lambda x: Dataset.range(x))]
            [0, 0, 1]
        """
        return _ops.flat_map.FlatMapDataset(self, map_func, name=name)

    def enumerate(self, start: int = 0, name: Optional[str] = None) -> "Dataset":
        """Pairs each element with its int64 index: ``(index, element)``.

        Example:
            >>> [(int(i), int(x)) for i, x in Dataset.range(5, 7).enumerate()]
            [(0, 5), (1, 6)]
        """
        return _ops.enumerate.EnumerateDataset(self, start, name=name)

    def concatenate(self, dataset: "Dataset", name: Optional[str] = None) -> "Dataset":
        """The elements of this dataset, then those of ``dataset`` (same structure and dtypes).

        Example:
            >>> [int(x) for x in Dataset.range(2).concatenate(Dataset.range(5, 6))]
            [0, 1, 5]
        """
        return _ops.concatenate.ConcatenateDataset(self, dataset, name=name)

    def cache(self, filename: str = "", name: Optional[str] = None) -> "Dataset":
        """Keeps the elements after the first full iteration, in memory or in files.

        Example:
            >>> ds = Dataset.range(3).map(lambda x: x * x).cache()
        """
        return _ops.cache.CacheDataset(self, filename, name=name)

    def apply(self, transformation_func: Callable[["Dataset"], "Dataset"]) -> "Dataset":
        """Returns ``transformation_func(self)``, which must be a Dataset.

        Example:
            >>> Dataset.range(4).apply(lambda ds: ds.batch(2)).cardinality()
            2
        """
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(
                f"Expected `transformation_func` to return a Dataset; it returned "
                f"{type(result).__name__}."
            )
        return result

    def with_options(self, options: Options, name: Optional[str] = None) -> "Dataset":
        """Attaches ``options`` to the pipeline (a later attachment wins field by field).

        Example:
            >>> options = Options()
            >>> options.experimental_distribute.auto_shard_policy = AutoShardPolicy.OFF
            >>> ds = Dataset.range(4).with_options(options)
        """
        return _ops.with_options.OptionsDataset(self, options, name=name)


class UnaryDataset(Dataset):
    """A transformation with one input dataset, kept in ``_input_dataset``."""

    def __init__(self, input_dataset: Dataset, name: Optional[str] = None) -> None:
        if not isinstance(input_dataset, Dataset):
            raise TypeError(f"Expected a Dataset input; received {type(input_dataset).__name__}.")
        self._input_dataset = input_dataset
        super().__init__(name)

    def _inputs(self) -> Tuple[Dataset, ...]:
        return (self._input_dataset,)

    def _set_inputs(self, inputs: Tuple[Dataset, ...]) -> None:
        self._input_dataset = inputs[0]

    def _compute_element_spec(self) -> Any:
        return self._input_dataset.element_spec

    def _cardinality(self) -> int:
        return self._input_dataset.cardinality()


_structure.register_dataset_type(Dataset)

from distribute.data import ops as _ops  # noqa: E402  (the ops subclass Dataset, defined above)
