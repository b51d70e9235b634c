"""Dataset.save, Dataset.load and Dataset.snapshot (the format is in ``_saved_format``).

``save`` iterates the dataset once and writes it; ``load`` reads it back (its cardinality is
known from the manifest). By default every element goes to shard 0 and ``load`` reads the
shards in order, so a save/load round trip keeps the element order (tf.data's defaults
spread elements over shards and interleave them). ``reader_func`` gets the dataset of shard
datasets and returns the dataset to read, as in tf.data.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any, Callable, Dict, List, Optional

import torch

from distribute.data._common import END, check_bool, check_callable
from distribute.data.dataset import Dataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops import _saved_format as fmt
from distribute.data.readers.tfrecord import TFRecordDataset
from distribute.data.readers.tfrecord_writer import TFRecordWriter
from distribute.errors import DataLossError, InvalidArgumentError

__all__ = ["LoadDataset", "ShardWriters", "check_save_compression", "save"]

_WAIT_POLL_S = 0.05


def check_save_compression(compression: Any) -> str:
    """None/"" or "GZIP" (tf.data's SNAPPY is not available here)."""
    if compression in (None, ""):
        return ""
    if isinstance(compression, str) and compression.upper() == "GZIP":
        return "GZIP"
    raise InvalidArgumentError(
        f"Expected `compression` to be None or 'GZIP'; received compression={compression!r}."
    )


def _shard_index(shard_func: Optional[Callable[..., Any]], element: Any) -> int:
    if shard_func is None:
        return 0
    value = shard_func(*element) if type(element) is tuple else shard_func(element)
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(
            f"`shard_func` must return a scalar integer >= 0 (the shard index); it returned {value!r:.100}."
        )
    return value


class ShardWriters:
    """Writes elements to temporary shard files; :meth:`publish` renames them and writes the
    manifest (last, atomically)."""

    def __init__(self, path: str, spec: Any, compression: str,
                 shard_func: Optional[Callable[..., Any]] = None) -> None:
        self.path, self.spec, self.compression, self.shard_func = path, spec, compression, shard_func
        self._spec_json = fmt.spec_to_json(spec)  # fails early for unsavable elements
        self._token = uuid.uuid4().hex
        self._writers: Dict[int, TFRecordWriter] = {}
        self._counts: Dict[int, int] = {}
        os.makedirs(path, exist_ok=True)

    def _temp(self, index: int) -> str:
        return os.path.join(self.path, f"{fmt.shard_name(index)}.tmp-{self._token}")

    def write(self, element: Any) -> None:
        """Appends ``element`` to its shard."""
        index = _shard_index(self.shard_func, element)
        writer = self._writers.get(index)
        if writer is None:
            writer = self._writers[index] = TFRecordWriter(self._temp(index), self.compression or None)
            self._counts[index] = 0
        writer.write(fmt.encode_element(element))
        self._counts[index] += 1

    def publish(self) -> None:
        """Closes the shards, renames them into place and writes the manifest."""
        shards = []
        for index in range(max(self._counts, default=-1) + 1):
            if index not in self._writers:
                TFRecordWriter(self._temp(index), self.compression or None).close()
                self._counts[index] = 0
            else:
                self._writers[index].close()
            os.replace(self._temp(index), os.path.join(self.path, fmt.shard_name(index)))
            shards.append({"file": fmt.shard_name(index), "elements": self._counts[index]})
        manifest = {"format": fmt.FORMAT, "element_spec": self._spec_json,
                    "compression": self.compression, "shards": shards}
        fmt.write_atomically(os.path.join(self.path, fmt.MANIFEST),
                             json.dumps(manifest, indent=1).encode())
        self._writers = {}

    def abandon(self) -> None:
        """Closes and deletes the temporary files (nothing is published)."""
        for index, writer in self._writers.items():
            writer.close()
            try:
                os.remove(self._temp(index))
            except OSError:
                pass
        self._writers = {}


def save(dataset: Dataset, path: Any, compression: Any = None,
         shard_func: Optional[Callable[..., Any]] = None, checkpoint_args: Any = None) -> None:
    """See :meth:`Dataset.save`."""
    if checkpoint_args is not None:
        raise InvalidArgumentError(
            "`checkpoint_args` is not supported: a save here is not checkpointed while it runs; "
            "pass checkpoint_args=None and run the save again if it is interrupted."
        )
    path = os.fspath(path)
    if shard_func is not None:
        check_callable("shard_func", shard_func)
    writers = ShardWriters(path, dataset.element_spec, check_save_compression(compression), shard_func)
    try:
        for element in dataset:
            writers.write(element)
    except BaseException:
        writers.abandon()
        raise
    writers.publish()


class _ShardIterator(IteratorImpl):
    op = "saved_shard"

    def __init__(self, dataset: "_ShardDataset", ctx: IterContext) -> None:
        self._dataset = dataset
        self._records = TFRecordDataset(dataset.file, dataset.compression)._make_iterator(ctx)
        self._count = 0

    def next(self) -> Any:
        record = self._records.next()
        ds = self._dataset
        if record is END:
            if self._count != ds.expected:
                raise DataLossError(f"The saved shard {ds.file!r} holds {self._count} elements; its "
                                    f"manifest says {ds.expected}. The files are truncated or mixed.")
            return END
        self._count += 1
        return fmt.decode_element(record, ds.spec)

    def _state(self) -> Dict[str, Any]:
        return {"count": self._count, "records": self._records.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        self._count = int(state["count"])
        self._records.set_state(state["records"])

    def close(self) -> None:
        self._records.close()


class _ShardDataset(Dataset):
    """The elements of one saved shard file."""

    _op = "saved_shard"
    _runs_python = True

    def __init__(self, file: str, compression: str, spec: Any, expected: int) -> None:
        self.file, self.compression, self.spec, self.expected = file, compression, spec, expected
        super().__init__()

    def _compute_element_spec(self) -> Any:
        return self.spec

    def _cardinality(self) -> int:
        return self.expected

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _ShardIterator(self, ctx)


class LoadDataset(Dataset):
    """``Dataset.load(path, element_spec, compression, reader_func, wait)``; attribute ``path``."""

    _op = "load"
    _runs_python = True

    def __init__(self, path: Any, element_spec: Any = None, compression: Any = None,
                 reader_func: Optional[Callable[[Dataset], Dataset]] = None, wait: bool = False,
                 name: Optional[str] = None) -> None:
        self.path = os.fspath(path)
        if check_bool("wait", wait):
            while not os.path.isfile(os.path.join(self.path, fmt.MANIFEST)):
                time.sleep(_WAIT_POLL_S)
        manifest = fmt.read_manifest(self.path)
        saved_spec = fmt.spec_from_json(manifest["element_spec"])
        if element_spec is not None and element_spec != saved_spec:
            raise ValueError(f"The given element_spec {element_spec} differs from the saved one "
                             f"{saved_spec}; pass element_spec=None to use the saved one.")
        self._spec = saved_spec if element_spec is None else element_spec
        stored = manifest["compression"]
        if compression is not None and check_save_compression(compression) != stored:
            raise InvalidArgumentError(f"The dataset at {self.path!r} was saved with compression="
                                       f"{stored or None!r}; received compression={compression!r}.")
        self.reader_func = None if reader_func is None else check_callable("reader_func", reader_func)
        self._shards: List[_ShardDataset] = [
            _ShardDataset(os.path.join(self.path, s["file"]), stored, self._spec, int(s["elements"]))
            for s in manifest["shards"]]
        self._total = sum(s.expected for s in self._shards)
        super().__init__(name)
        self._pipeline = self._build_pipeline()

    def _build_pipeline(self) -> Dataset:
        if not self._shards:
            return _EmptyDataset(self._spec)
        if self.reader_func is None:
            pipeline: Dataset = self._shards[0]
            for shard in self._shards[1:]:
                pipeline = pipeline.concatenate(shard)
            return pipeline
        result = self.reader_func(Dataset.from_tensor_slices(list(self._shards)))
        if not isinstance(result, Dataset):
            raise TypeError(f"`reader_func` must return a Dataset; it returned {type(result).__name__}.")
        return result

    def _compute_element_spec(self) -> Any:
        return self._spec

    def _cardinality(self) -> int:
        return self._total if self.reader_func is None else self._pipeline.cardinality()

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return self._pipeline._make_iterator(ctx)


class _EmptyDataset(Dataset):
    _op = "empty"

    def __init__(self, spec: Any) -> None:
        self._spec = spec
        super().__init__()

    def _compute_element_spec(self) -> Any:
        return self._spec

    def _cardinality(self) -> int:
        return 0

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _EmptyIterator()


class _EmptyIterator(IteratorImpl):
    op = "empty"

    def next(self) -> Any:
        return END
