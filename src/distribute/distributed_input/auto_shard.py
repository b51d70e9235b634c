"""Auto-sharding: rewrite a dataset graph so that each worker reads its share of the data.

The policy comes from ``dataset.options().experimental_distribute.auto_shard_policy``:

* ``OFF``: nothing changes; every worker reads everything.
* ``FILE``: a ``shard(W, w)`` goes on the file names feeding each file reader (also when the
  reader is built inside ``interleave``/``flat_map``: then the interleave's input is sharded).
  A ``shuffle`` of the file names is moved after the shard, so unseeded shuffles cannot make
  workers overlap. Skipped when there is a single worker.
* ``DATA``: every worker reads everything and keeps its share of the rebatched pieces (the
  sharding is applied by :mod:`~distribute.distributed_input.rebatch`, on the pieces, as the
  rewritten TensorFlow graph does).
* ``HINT``: ``shard(SHARD_HINT, SHARD_HINT)`` placeholders become ``shard(W, w)``.
* ``AUTO``: FILE if every source of the pipeline is a file reader (and there are enough
  files), otherwise DATA, logged in one line when there are several workers.

:func:`apply_auto_shard` returns the rewritten dataset and the sharding actually applied,
which decides the rebatching algorithm (see :func:`~distribute.distributed_input.rebatch.choose`).
"""

from __future__ import annotations

import logging
from typing import NamedTuple, Optional

from distribute.data import AutoShardPolicy, Dataset, INFINITE_CARDINALITY
from distribute.data.ops.shard import ShardDataset
from distribute.data.readers._reader import FileReaderDataset
from distribute.errors import InvalidArgumentError, NotFoundError

__all__ = ["FILE_SHARDED", "DATA", "NONE", "HINT_FILLED", "Sharding", "apply_auto_shard"]

logger = logging.getLogger("distribute")

NONE = "none"
FILE_SHARDED = "file"
DATA = "data"
HINT_FILLED = "hint"


class Sharding(NamedTuple):
    """The worker's dataset after the rewrite, and which sharding was applied."""

    dataset: Dataset
    applied: str


class _Unshardable(Exception):
    """FILE sharding is impossible for this pipeline (the message says why)."""


def _shard_file_names(files: Dataset, num_workers: int, index: int) -> Dataset:
    if files._op == "shuffle":
        return files._with_inputs((_shard_file_names(files._inputs()[0], num_workers, index),))
    return files.shard(num_workers, index)


def _count_files(files: Dataset) -> Optional[int]:
    count = files.cardinality()
    if count >= 0:
        return count
    if count == INFINITE_CARDINALITY:
        return None
    with iter(files) as names:
        return sum(1 for _ in names)


def _builds_reader(node: Dataset) -> bool:
    sample = node._function_dataset_sample()
    return sample is not None and any(n._is_file_reader for n in sample._walk())


class _FileSharder:
    """Puts ``shard(W, w)`` on the file names of every reader; raises _Unshardable otherwise."""

    def __init__(self, num_workers: int, index: int) -> None:
        self.num_workers, self.index = num_workers, index
        self.fewest_files: Optional[int] = None

    def rewrite(self, node: Dataset) -> Dataset:
        if isinstance(node, FileReaderDataset):
            return node._with_inputs((self._shard(node.filenames),))
        if node._op in ("interleave", "flat_map") and _builds_reader(node):
            return node._with_inputs((self._shard(node._inputs()[0]),))
        inputs = node._inputs()
        if not inputs:
            raise _Unshardable(f"Found an unshardable source dataset: {node._op}")
        return node._with_inputs(tuple(self.rewrite(i) for i in inputs))

    def _shard(self, files: Dataset) -> Dataset:
        count = _count_files(files)
        if count is not None and count < self.num_workers:
            raise _Unshardable(_not_enough_files(count, self.num_workers))
        return _shard_file_names(files, self.num_workers, self.index)


def _not_enough_files(count: int, num_workers: int) -> str:
    return (f"Could not apply FILE based sharding: the dataset only has {count} file(s), which is not "
            f"enough for the required {num_workers} shards/workers. If you are using datasets with "
            "distribution strategy, consider setting the auto sharding policy to either DATA or OFF "
            "using the `experimental_distribute.auto_shard_policy` option of `distribute.data.Options()`. "
            "Or, split your input files into a larger number of small files such that number of files "
            "is greater than number of shards/workers.")


def _file_error(reason: str) -> Exception:
    if reason.startswith("Could not apply FILE"):
        return InvalidArgumentError(reason)
    return NotFoundError(
        f"{reason}. FILE auto-sharding needs every source of the pipeline to be a file reader "
        "(TFRecordDataset, TextLineDataset, or one built inside interleave/flat_map). Set "
        "`options.experimental_distribute.auto_shard_policy = AutoShardPolicy.DATA` (or OFF) "
        "with Dataset.with_options(options) to shard this dataset by elements instead.")


def fill_shard_hints(node: Dataset, num_workers: int, index: int) -> Dataset:
    """Replaces every ``shard(SHARD_HINT, SHARD_HINT)`` upstream of ``node`` by ``shard(W, w)``."""
    inputs = node._inputs()
    new_inputs = tuple(fill_shard_hints(i, num_workers, index) for i in inputs)
    if isinstance(node, ShardDataset) and node.is_placeholder:
        return new_inputs[0].shard(num_workers, index)
    if any(a is not b for a, b in zip(new_inputs, inputs)):
        return node._with_inputs(new_inputs)
    return node


def _try_file_sharding(dataset: Dataset, num_workers: int, index: int) -> Dataset:
    return _FileSharder(num_workers, index).rewrite(dataset)


def _auto(dataset: Dataset, num_workers: int, index: int) -> Sharding:
    try:
        sharded = _try_file_sharding(dataset, max(num_workers, 1), index)
    except _Unshardable as reason:
        if num_workers > 1:
            logger.warning("AUTO sharding policy will apply DATA sharding policy as it failed to apply "
                           "FILE sharding policy because of the following reason: %s", reason)
        return Sharding(dataset, DATA)
    if num_workers == 1:
        return Sharding(dataset, NONE)
    return Sharding(sharded, FILE_SHARDED)


def apply_auto_shard(dataset: Dataset, num_workers: int, index: int) -> Sharding:
    """Rewrites ``dataset`` for worker ``index`` of ``num_workers`` under its auto-shard policy.

    Raises:
        NotFoundError: FILE policy on a pipeline with a source that is not a file reader.
        InvalidArgumentError: FILE policy with fewer files than workers.
    """
    policy = dataset.options().experimental_distribute.effective_auto_shard_policy
    if policy is AutoShardPolicy.OFF:
        return Sharding(dataset, NONE)
    if policy is AutoShardPolicy.HINT:
        return Sharding(fill_shard_hints(dataset, num_workers, index), HINT_FILLED)
    if policy is AutoShardPolicy.DATA:
        return Sharding(dataset, DATA)
    if policy is AutoShardPolicy.FILE:
        if num_workers == 1:
            return Sharding(dataset, NONE)
        try:
            return Sharding(_try_file_sharding(dataset, num_workers, index), FILE_SHARDED)
        except _Unshardable as reason:
            raise _file_error(str(reason)) from None
    return _auto(dataset, num_workers, index)
