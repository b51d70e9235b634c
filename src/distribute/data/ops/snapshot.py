"""Dataset.snapshot: the first complete iteration writes the elements, later ones read them.

The snapshot of a pipeline lives in ``path/<fingerprint>``, in the format of
``Dataset.save``; the fingerprint hashes the pipeline (each node's kind, element_spec and
parameters, the contents of its in-memory tensors, and the bytecode and constants of its
functions), so a changed pipeline writes
a new snapshot. An iteration that finds a complete snapshot reads it; otherwise it passes the
input's elements through while writing them, and publishes the snapshot (atomically) when it
reaches the end. An interrupted iteration publishes nothing.

State: whether the iterator reads or writes, and the reading (or input) iterator's state. A
writing iterator restored from a state keeps passing its input through but writes nothing
(the elements before the state are not in this process): a later full iteration writes the
snapshot.
"""

from __future__ import annotations

import hashlib
import os
import types
from typing import Any, Callable, Dict, Optional

import numpy as np
import torch

from distribute.data._common import END, check_callable
from distribute.data.dataset import Dataset, UnaryDataset
from distribute.data.iterator import IterContext, IteratorImpl
from distribute.data.ops import _saved_format as fmt
from distribute.data.ops.save_load import LoadDataset, ShardWriters, check_save_compression

__all__ = ["SnapshotDataset", "fingerprint"]


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        data = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        return f"tensor({value.dtype},{tuple(value.shape)},{hashlib.sha256(data).hexdigest()})"
    if isinstance(value, np.ndarray):
        data = repr(value.tolist()).encode() if value.dtype == object else value.tobytes()
        return f"array({value.dtype},{value.shape},{hashlib.sha256(data).hexdigest()})"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k!r}:{_describe(v)}" for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(value, types.FunctionType):
        code = value.__code__
        return f"fn({code.co_code.hex()},{code.co_consts!r},{code.co_names!r})"
    if isinstance(value, Dataset):
        return f"dataset({value._op})"
    if isinstance(value, (int, float, str, bytes, bool, type(None))):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_describe(v) for v in value) + "]"
    return type(value).__name__


def fingerprint(dataset: Dataset) -> str:
    """A hex digest that changes when the pipeline changes."""
    digest = hashlib.sha256()
    for node in dataset._walk():
        params = sorted((k, _describe(v)) for k, v in vars(node).items() if not k.startswith("_"))
        digest.update(f"{node._op}|{node.element_spec!r}|{params!r};".encode())
    return digest.hexdigest()[:32]


class _SnapshotIterator(IteratorImpl):
    op = "snapshot"

    def __init__(self, dataset: "SnapshotDataset", ctx: IterContext) -> None:
        self._dataset, self._ctx = dataset, ctx
        self._directory = dataset._directory()
        self._reading = os.path.isfile(os.path.join(self._directory, fmt.MANIFEST))
        self._writers: Optional[ShardWriters] = None
        if self._reading:
            self._source = dataset._loader(self._directory)._make_iterator(ctx)
        else:
            self._source = dataset._input_dataset._make_iterator(ctx)
            self._writers = ShardWriters(self._directory, dataset.element_spec, dataset._compression,
                                         dataset.shard_func)

    def next(self) -> Any:
        element = self._source.next()
        if self._writers is not None:
            if element is END:
                self._writers.publish()
                self._writers = None
            else:
                self._writers.write(element)
        return element

    def _state(self) -> Dict[str, Any]:
        return {"reading": self._reading, "source": self._source.get_state()}

    def _restore(self, state: Dict[str, Any]) -> None:
        if bool(state["reading"]) != self._reading:
            self.close()
            self._reading = bool(state["reading"])
            dataset = self._dataset
            source = dataset._loader(self._directory) if self._reading else dataset._input_dataset
            self._source = source._make_iterator(self._ctx)
        if self._writers is not None:
            self._writers.abandon()
            self._writers = None
        self._source.set_state(state["source"])

    def close(self) -> None:
        if self._writers is not None:
            self._writers.abandon()
            self._writers = None
        self._source.close()


class SnapshotDataset(UnaryDataset):
    """``ds.snapshot(path, compression, reader_func, shard_func)``; attributes of the same names."""

    _op = "snapshot"
    _runs_python = True

    def __init__(self, input_dataset: Dataset, path: Any, compression: Any = "AUTO",
                 reader_func: Optional[Callable[[Dataset], Dataset]] = None,
                 shard_func: Optional[Callable[..., Any]] = None, name: Optional[str] = None) -> None:
        self.path = os.fspath(path)
        self.compression = compression
        self._compression = "" if compression == "AUTO" else check_save_compression(compression)
        self.reader_func = None if reader_func is None else check_callable("reader_func", reader_func)
        self.shard_func = None if shard_func is None else check_callable("shard_func", shard_func)
        super().__init__(input_dataset, name)

    def _directory(self) -> str:
        return os.path.join(self.path, fingerprint(self._input_dataset))

    def _loader(self, directory: str) -> Dataset:
        return LoadDataset(directory, reader_func=self.reader_func)

    def _make_sequential_iterator(self, ctx: IterContext) -> IteratorImpl:
        return _SnapshotIterator(self, ctx)
