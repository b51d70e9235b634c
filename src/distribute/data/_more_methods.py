"""The rest of ``tf.data.Dataset``'s methods, mixed into :class:`~distribute.data.Dataset`.

Kept apart from ``dataset.py`` to keep files small; each method builds a node of
:mod:`distribute.data.ops` (imported when called: the ops import ``dataset.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator as PyIterator, Optional, Sequence, cast

import torch

from distribute._base import nest
from distribute.data import _structure
from distribute.data._common import user_stop_error
from distribute.errors import InvalidArgumentError

if TYPE_CHECKING:
    from distribute.data.dataset import Dataset

__all__ = ["InspectionMethods", "MoreSources", "MoreTransformations", "SavingMethods"]


def _dataset(mixin: object) -> "Dataset":
    """A mixin method's ``self`` typed as what it is: a Dataset (only Dataset mixes these in)."""
    return cast("Dataset", mixin)


class InspectionMethods:
    """Methods that read the elements: ``as_numpy_iterator``, ``reduce``, ``get_single_element``."""

    def as_numpy_iterator(self) -> PyIterator[Any]:
        """Iterates the elements as numpy arrays (strings stay ``bytes``).

        Example:
            >>> list(Dataset.range(3).as_numpy_iterator())
            [0, 1, 2]
        """
        def to_numpy(leaf: Any) -> Any:
            if isinstance(leaf, torch.Tensor):
                array = leaf.detach().cpu().numpy()
                return array[()] if array.ndim == 0 else array
            return leaf

        for element in _dataset(self):
            yield nest.map_structure(to_numpy, element) if nest.is_nested(element) else to_numpy(element)

    def reduce(self, initial_state: Any, reduce_func: Callable[[Any, Any], Any]) -> Any:
        """Folds the elements into one value: ``state = reduce_func(state, element)``.

        Example:
            >>> int(Dataset.range(5).reduce(0, lambda s, x: s + x))
            10
        """
        state = _structure.normalize(initial_state, "reduce's initial_state")
        for element in _dataset(self):
            try:
                result = reduce_func(state, element)
            except StopIteration as exc:
                raise user_stop_error(exc, "reduce_func") from exc
            state = _structure.normalize(result, "reduce_func's result")
        return state

    def get_single_element(self, name: Optional[str] = None) -> Any:
        """The only element; InvalidArgumentError if the dataset is empty or has more.

        Example:
            >>> int(Dataset.range(1).get_single_element())
            0
        """
        with iter(_dataset(self)) as iterator:
            first = iterator.get_next_as_optional()
            if not first.has_value():
                raise InvalidArgumentError("Dataset was empty.")
            if iterator.get_next_as_optional().has_value():
                raise InvalidArgumentError("Dataset had more than one element.")
            return first.get_value()


class MoreTransformations:
    """take_while, scan, unique, window, group_by_window, bucket_by_sequence_length,
    rejection_resample, rebatch, ignore_errors."""

    def take_while(self, predicate: Callable[..., Any], name: Optional[str] = None) -> "Dataset":
        """The elements until ``predicate`` is first false.

        Example:
            >>> [int(x) for x in Dataset.range(10).take_while(lambda x: x < 4)]
            [0, 1, 2, 3]
        """
        from distribute.data.ops.take_while import TakeWhileDataset

        return TakeWhileDataset(_dataset(self), predicate, name=name)

    def scan(self, initial_state: Any, scan_func: Callable[[Any, Any], Any],
             name: Optional[str] = None) -> "Dataset":
        """A running state: ``scan_func(state, element)`` returns ``(new_state, output)``.

        Example:
            >>> [int(x) for x in Dataset.range(5).scan(0, lambda s, x: (s + x, s + x))]
            [0, 1, 3, 6, 10]
        """
        from distribute.data.ops.scan import ScanDataset

        return ScanDataset(_dataset(self), initial_state, scan_func, name=name)

    def unique(self, name: Optional[str] = None) -> "Dataset":
        """Each distinct element once (int32, int64 or string elements of one component).

        Example:
            >>> [int(x) for x in Dataset.from_tensor_slices([1, 37, 2, 37, 2, 1]).unique()]
            [1, 37, 2]
        """
        from distribute.data.ops.unique import UniqueDataset

        return UniqueDataset(_dataset(self), name=name)

    def window(self, size: int, shift: Optional[int] = None, stride: int = 1,
               drop_remainder: bool = False, name: Optional[str] = None) -> "Dataset":
        """Windows of ``size`` elements every ``shift``, each a structure of datasets.

        Example:
            >>> ds = Dataset.range(7).window(3, shift=2, drop_remainder=True)
            >>> [w.tolist() for w in ds.flat_map(lambda w: w.batch(3))]
            [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
        """
        from distribute.data.ops.window import WindowDataset

        return WindowDataset(_dataset(self), size, shift, stride, drop_remainder, name=name)

    def group_by_window(self, key_func: Callable[..., Any], reduce_func: Callable[[Any, Any], "Dataset"],
                        window_size: Optional[int] = None,
                        window_size_func: Optional[Callable[[Any], Any]] = None,
                        name: Optional[str] = None) -> "Dataset":
        """Groups elements by ``key_func`` and reduces each window of a group to a dataset.

        Example:
            >>> ds = Dataset.range(10).group_by_window(lambda x: x % 2, lambda k, w: w.batch(5), 5)
            >>> [b.tolist() for b in ds]
            [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]
        """
        from distribute.data.ops.group_by_window import GroupByWindowDataset

        return GroupByWindowDataset(_dataset(self), key_func, reduce_func, window_size, window_size_func, name=name)

    def bucket_by_sequence_length(
            self, element_length_func: Callable[..., Any], bucket_boundaries: Sequence[int],
            bucket_batch_sizes: Sequence[int], padded_shapes: Any = None, padding_values: Any = None,
            pad_to_bucket_boundary: bool = False, no_padding: bool = False,
            drop_remainder: bool = False, name: Optional[str] = None) -> "Dataset":
        """Batches elements by length bucket, padding each batch (see docs/data.md).

        Example:
            >>> ds = Dataset.range(1, 5).map(lambda n: torch.ones(int(n)))
            >>> [tuple(b.shape) for b in ds.bucket_by_sequence_length(lambda x: len(x), [3], [2, 2])]
            [(2, 2), (2, 4)]
        """
        from distribute.data.ops.bucket import bucket_by_sequence_length

        return bucket_by_sequence_length(
            _dataset(self), element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder, name)

    def rejection_resample(self, class_func: Callable[..., Any], target_dist: Any,
                           initial_dist: Any = None, seed: Optional[int] = None,
                           name: Optional[str] = None) -> "Dataset":
        """``(class, element)`` pairs resampled towards ``target_dist`` (rejection sampling).

        Example:
            >>> ds = Dataset.range(100).rejection_resample(lambda x: x % 2, [0.5, 0.5], seed=1)
        """
        from distribute.data.ops.rejection_resample import RejectionResampleDataset

        return RejectionResampleDataset(_dataset(self), class_func, target_dist, initial_dist, seed, name=name)

    def rebatch(self, batch_size: Any, drop_remainder: bool = False, name: Optional[str] = None) -> "Dataset":
        """``unbatch().batch(batch_size)``; a list of sizes is cycled through.

        Example:
            >>> [b.tolist() for b in Dataset.range(6).batch(4).rebatch([2, 1])]
            [[0, 1], [2], [3, 4], [5]]
        """
        from distribute.data.ops.rebatch import RebatchDataset

        return RebatchDataset(_dataset(self), batch_size, drop_remainder, name=name)

    def ignore_errors(self, log_warning: bool = False, name: Optional[str] = None) -> "Dataset":
        """Drops the elements whose computation raised an exception.

        Example:
            >>> ds = Dataset.from_tensor_slices([1, 0, 2]).map(lambda x: 10 // int(x))
            >>> [int(x) for x in ds.ignore_errors()]
            [10, 5]
        """
        from distribute.data.ops.ignore_errors import IgnoreErrorsDataset

        return IgnoreErrorsDataset(_dataset(self), log_warning, name=name)


class SavingMethods:
    """save, load, snapshot (the format: docs/data.md, "Saved datasets")."""

    def save(self, path: Any, compression: Any = None, shard_func: Optional[Callable[..., Any]] = None,
             checkpoint_args: Any = None) -> None:
        """Writes the elements to the directory ``path`` (read them with :meth:`load`).

        Example:
            >>> Dataset.range(3).save("/tmp/saved")
            >>> [int(x) for x in Dataset.load("/tmp/saved")]
            [0, 1, 2]
        """
        from distribute.data.ops.save_load import save

        save(_dataset(self), path, compression, shard_func, checkpoint_args)

    @staticmethod
    def load(path: Any, element_spec: Any = None, compression: Any = None,
             reader_func: Optional[Callable[["Dataset"], "Dataset"]] = None, wait: bool = False) -> "Dataset":
        """The dataset saved in ``path`` by :meth:`save` (checksums verified while reading);
        with ``wait``, waits until a save (from another thread or process) has finished.

        Example:
            >>> ds = Dataset.load("/tmp/saved")
        """
        from distribute.data.ops.save_load import LoadDataset

        return LoadDataset(path, element_spec, compression, reader_func, wait)

    def snapshot(self, path: Any, compression: Any = "AUTO",
                 reader_func: Optional[Callable[["Dataset"], "Dataset"]] = None,
                 shard_func: Optional[Callable[..., Any]] = None, name: Optional[str] = None) -> "Dataset":
        """Writes the elements under ``path`` on the first full iteration; reads them after.

        Example:
            >>> ds = Dataset.range(5).map(lambda x: x * x).snapshot("/tmp/snap")
        """
        from distribute.data.ops.snapshot import SnapshotDataset

        return SnapshotDataset(_dataset(self), path, compression, reader_func, shard_func, name=name)


class MoreSources:
    """random, counter, sample_from_datasets, choose_from_datasets."""

    @staticmethod
    def random(seed: Optional[int] = None, rerandomize_each_iteration: Optional[bool] = None,
               name: Optional[str] = None) -> "Dataset":
        """Infinite random int64 scalars (our generator, see docs/data.md).

        Example:
            >>> first = [int(x) for x in Dataset.random(seed=4).take(3)]
        """
        from distribute.data.ops.random import RandomDataset

        return RandomDataset(seed, rerandomize_each_iteration, name=name)

    @staticmethod
    def counter(start: int = 0, step: int = 1, dtype: Any = torch.int64,
                name: Optional[str] = None) -> "Dataset":
        """``start, start + step, ...`` forever.

        Example:
            >>> [int(x) for x in Dataset.counter(5, -2).take(3)]
            [5, 3, 1]
        """
        from distribute.data.ops.random import CounterDataset

        return CounterDataset(start, step, dtype, name=name)

    @staticmethod
    def sample_from_datasets(datasets: Sequence["Dataset"], weights: Any = None, seed: Optional[int] = None,
                             stop_on_empty_dataset: bool = False,
                             rerandomize_each_iteration: Optional[bool] = None) -> "Dataset":
        """Elements drawn at random from ``datasets`` with probabilities ``weights``.

        Example:
            >>> ds = Dataset.sample_from_datasets([Dataset.range(3), Dataset.range(10, 13)], seed=1)
            >>> sorted(int(x) for x in ds)
            [0, 1, 2, 10, 11, 12]
        """
        from distribute.data.ops.sample import SampleFromDatasetsDataset

        return SampleFromDatasetsDataset(datasets, weights, seed, stop_on_empty_dataset,
                                         rerandomize_each_iteration)

    @staticmethod
    def choose_from_datasets(datasets: Sequence["Dataset"], choice_dataset: "Dataset",
                             stop_on_empty_dataset: bool = True) -> "Dataset":
        """Each element from the input named by the next (int64) element of ``choice_dataset``.

        Example:
            >>> choice = Dataset.from_tensor_slices([0, 1, 1, 0])
            >>> ds = Dataset.choose_from_datasets([Dataset.range(3), Dataset.range(10, 13)], choice)
            >>> [int(x) for x in ds]
            [0, 10, 11, 1]
        """
        from distribute.data.ops.sample import ChooseFromDatasetsDataset

        return ChooseFromDatasetsDataset(datasets, choice_dataset, stop_on_empty_dataset)
