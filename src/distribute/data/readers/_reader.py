"""The common shape of file readers: a dataset of file names in, records out.

Like tf.data's readers, a reader's only input is a dataset of file names (scalar strings),
so a graph rewriter can put a ``shard`` on it (FILE auto-sharding). File names may be given
as a string, a list or array of strings, or a Dataset of strings. Files are read one after
the other, or, with ``num_parallel_reads``, ``num_parallel_reads`` at a time, interleaving
one record from each.

Readers hand over records a block at a time (a list per ``buffer_size`` bytes read), so the
per-record cost of the sequence is a list pop. State: the file-name iterator's position, the
current file, and the offset of the next record in it (in the uncompressed stream).
"""

from __future__ import annotations

import abc
import os
from typing import Any, Dict, List, Optional, Tuple, cast

import numpy as np

from distribute._base.tensor_spec import TensorSpec, string
from distribute.data._common import END, UNKNOWN_CARDINALITY, check_positive_or_autotune
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops.interleave import InterleaveDataset
from distribute.data.readers._files import check_compression, path_of

__all__ = ["FileReaderDataset", "RecordReader", "filenames_dataset"]


class RecordReader(abc.ABC):
    """Reads the records of one file a block at a time.

    ``offset`` is where the first record not yet handed out starts.
    """

    offset = 0

    @abc.abstractmethod
    def next_block(self) -> Optional[Tuple[List[bytes], List[int]]]:
        """The next records and their start offsets, in file order; None at the end."""

    def close(self) -> None:
        """Closes the file (and stops any reading ahead)."""


def _names_array(names: Any) -> np.ndarray:
    flat = list(names)
    out = np.empty(len(flat), dtype=object)
    out[:] = [os.fsencode(path_of(n)) for n in flat]
    return out


def filenames_dataset(filenames: Any, what: str) -> Dataset:
    """``filenames`` as a Dataset of scalar strings."""
    if isinstance(filenames, Dataset):
        spec = filenames.element_spec
        if not isinstance(spec, TensorSpec) or spec.dtype is not string or spec.shape not in ((), None):
            raise TypeError(
                f"{what} expects a Dataset of scalar strings (file names); received a dataset with "
                f"element_spec {spec}."
            )
        return filenames
    if isinstance(filenames, (str, bytes, os.PathLike)):
        return Dataset.from_tensors(os.fsencode(path_of(filenames)))
    if isinstance(filenames, np.ndarray) and filenames.ndim == 0:
        return Dataset.from_tensors(os.fsencode(path_of(filenames)))
    if isinstance(filenames, (list, tuple, np.ndarray)):
        if len(filenames) == 0:
            raise ValueError(f"{what} needs at least one file name; received an empty list.")
        return Dataset.from_tensor_slices(_names_array(filenames))
    raise TypeError(
        f"{what} expects file names: a string, a list of strings or a Dataset of strings; "
        f"received {type(filenames).__name__}."
    )


class _FileSequenceIterator(IteratorImpl):
    """Reads the files named by the input, one after the other."""

    def __init__(self, dataset: "FileReaderDataset", ctx: IterContext) -> None:
        self.op = dataset._op
        self._dataset = dataset
        self._names = dataset._input_dataset._make_iterator(ctx)
        self._reader: Optional[RecordReader] = None
        self._path: Optional[str] = None
        self._records: List[bytes] = []  # records of the current block, next last
        self._offsets: List[int] = []  # their offsets, next last

    def next(self) -> Any:
        if self._records:
            self._offsets.pop()
            return self._records.pop()
        return self._next_block()

    def next_list(self, n: int) -> List[Any]:
        out: List[Any] = []
        if not self._records:
            first = self._next_block()
            if first is END:
                return out
            out.append(first)
        count = min(n - len(out), len(self._records))
        if count > 0:
            cut = len(self._records) - count
            chunk = self._records[cut:]
            del self._records[cut:], self._offsets[cut:]
            chunk.reverse()
            out += chunk
        return out

    def _next_block(self) -> Any:
        while True:
            if self._reader is None:
                name = self._names.next()
                if name is END:
                    return END
                self._path = path_of(name)
                self._reader = self._dataset._open_reader(self._path, 0)
            block = self._reader.next_block()
            if block is not None:
                records, offsets = block
                records.reverse()
                offsets.reverse()
                self._records, self._offsets = records, offsets
                if records:
                    self._offsets.pop()
                    return self._records.pop()
                continue
            self._reader.close()
            self._reader, self._path = None, None

    def _state(self) -> Dict[str, Any]:
        if self._offsets:
            offset = self._offsets[-1]
        else:
            offset = 0 if self._reader is None else self._reader.offset
        return {"path": self._path, "offset": offset, "files": self._names.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        self.close_reader()
        self._names.set_state(state["files"])
        self._path = state["path"]
        if self._path is not None:
            self._reader = self._dataset._open_reader(self._path, int(state["offset"]))

    def close_reader(self) -> None:
        self._records, self._offsets = [], []
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def close(self) -> None:
        self.close_reader()
        self._names.close()


class FileReaderDataset(UnaryDataset):
    """Base of the file readers; attributes ``compression_type``, ``buffer_size``,
    ``num_parallel_reads``; the file names are the input dataset."""

    _is_file_reader = True
    _runs_python = True  # reads files

    def __init__(self, filenames: Any, compression_type: Optional[str] = None,
                 buffer_size: Optional[int] = None, num_parallel_reads: Optional[int] = None,
                 name: Optional[str] = None) -> None:
        self.compression_type = check_compression(compression_type)
        self.buffer_size = check_positive_or_autotune("buffer_size", buffer_size)
        self.num_parallel_reads = check_positive_or_autotune("num_parallel_reads", num_parallel_reads)
        super().__init__(filenames_dataset(filenames, type(self).__name__), name)

    @property
    def filenames(self) -> Dataset:
        """The dataset of file names (the input)."""
        return self._input_dataset

    def _open_reader(self, path: str, offset: int) -> RecordReader:
        raise NotImplementedError(f"{type(self).__name__} must open its files")

    def _compute_element_spec(self) -> TensorSpec:
        return TensorSpec((), string)

    def _cardinality(self) -> int:
        return 0 if self._input_dataset.cardinality() == 0 else UNKNOWN_CARDINALITY

    def _single_file_reader(self, name: Any) -> "FileReaderDataset":
        clone = cast("FileReaderDataset", self._with_inputs((Dataset.from_tensors(name),)))  # a copy of self
        clone.num_parallel_reads = None
        return clone

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        parallel = self.num_parallel_reads
        if parallel is None or parallel == 1:
            return _FileSequenceIterator(self, ctx)
        cycle = (os.cpu_count() or 1) if parallel < 0 else parallel
        interleave = InterleaveDataset(self._input_dataset, self._single_file_reader, cycle, 1, parallel)
        return interleave._make_iterator(ctx)
