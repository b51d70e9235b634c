"""The file format of ``Dataset.cache(filename)``: chunks of saved elements plus an index.

``{filename}.index`` (JSON) is written last and marks a complete cache; each
``{filename}.chunk-NNNNN`` holds up to :data:`CHUNK_ELEMENTS` elements saved with
``torch.save`` as plain data and tensors (loaded with ``weights_only=True``). A writer first
writes ``{filename}.tmp-TOKEN.chunk-NNNNN`` files and renames them when its iteration reached
the end, so an interrupted iteration never leaves a cache that looks complete. While a writer
is active it holds ``{filename}.lockfile`` (created exclusively): a second writer of the same
``filename``, in this process or another, raises AlreadyExistsError, as in tf.data.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, List

import torch

from distribute.data import _structure
from distribute.errors import AlreadyExistsError, DataLossError, NotFoundError

__all__ = ["CHUNK_ELEMENTS", "CacheFiles"]

CHUNK_ELEMENTS = 1024
FORMAT = "distribute.data.cache/1"


class CacheFiles:
    """Reads and writes the files of one cache ``filename``."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.index_path = filename + ".index"
        self.lock_path = filename + ".lockfile"

    def chunk_path(self, i: int, token: str = "") -> str:
        """The path of chunk ``i`` (of a writer's temporary set when ``token`` is given)."""
        prefix = f"{self.filename}.tmp-{token}" if token else self.filename
        return f"{prefix}.chunk-{i:05d}"

    def complete(self) -> bool:
        """True when a finished cache exists."""
        return os.path.exists(self.index_path)

    def check_writable(self) -> None:
        """Raises NotFoundError when the cache's directory does not exist."""
        directory = os.path.dirname(os.path.abspath(self.filename))
        if not os.path.isdir(directory):
            raise NotFoundError(
                f"Cannot write the cache {self.filename!r}: the directory {directory!r} does not "
                f"exist. Create it, or pass a filename in an existing directory."
            )

    def read_index(self) -> dict:
        """The index of a complete cache."""
        try:
            with open(self.index_path) as f:
                index = json.load(f)
        except (OSError, ValueError) as exc:
            raise DataLossError(f"The cache index {self.index_path!r} is unreadable: {exc}.") from exc
        if index.get("format") != FORMAT:
            raise DataLossError(f"{self.index_path!r} is not a cache index of format {FORMAT!r}.")
        return index

    def read_chunk(self, i: int, spec: Any) -> List[Any]:
        """The elements of chunk ``i``."""
        path = self.chunk_path(i)
        try:
            saved = torch.load(path, weights_only=True)
            return [_structure.decode(e, spec) for e in saved["elements"]]
        except FileNotFoundError:
            raise DataLossError(
                f"The cache chunk {path!r} is missing; delete {self.index_path!r} to rebuild the cache."
            ) from None
        except Exception as exc:  # noqa: BLE001  any decoding problem means a corrupt file
            raise DataLossError(f"The cache chunk {path!r} is corrupt or unreadable: {exc}.") from exc

    def new_writer(self) -> "CacheWriter":
        """A writer of a new cache (temporary until :meth:`CacheWriter.commit`); it holds the
        lock file until it commits or discards."""
        self.check_writable()
        self._lock()
        return CacheWriter(self)

    def _lock(self) -> None:
        try:
            fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            raise AlreadyExistsError(
                f"Another iterator is writing the cache {self.filename!r}: its lock file "
                f"{self.lock_path!r} exists. Let that iteration finish (or close it) before "
                f"iterating again; if no other program uses this cache, delete the lock file."
            ) from None
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")

    def unlock(self) -> None:
        """Removes the lock file of this writer."""
        try:
            os.remove(self.lock_path)
        except FileNotFoundError:
            pass


class CacheWriter:
    """Buffers elements into temporary chunks; ``commit`` publishes them."""

    def __init__(self, files: CacheFiles) -> None:
        self._files = files
        self._token = uuid.uuid4().hex[:12]
        self._buffer: List[Any] = []
        self._chunks = 0
        self._count = 0

    def add(self, element: Any) -> None:
        """Records one element."""
        self._buffer.append(_structure.encode(element))
        self._count += 1
        if len(self._buffer) >= CHUNK_ELEMENTS:
            self._flush()

    def _flush(self) -> None:
        torch.save({"elements": self._buffer}, self._files.chunk_path(self._chunks, self._token))
        self._chunks += 1
        self._buffer = []

    def commit(self) -> None:
        """Publishes the cache unless another writer finished first."""
        if self._buffer or self._chunks == 0:
            self._flush()
        if self._files.complete():
            self.discard()
            return
        for i in range(self._chunks):
            os.replace(self._files.chunk_path(i, self._token), self._files.chunk_path(i))
        tmp_index = f"{self._files.index_path}.tmp-{self._token}"
        with open(tmp_index, "w") as f:
            json.dump({"format": FORMAT, "count": self._count, "chunks": self._chunks}, f)
        os.replace(tmp_index, self._files.index_path)
        self._files.unlock()

    def discard(self) -> None:
        """Removes the temporary chunks and the lock file."""
        for i in range(self._chunks):
            try:
                os.remove(self._files.chunk_path(i, self._token))
            except FileNotFoundError:
                pass
        self._chunks, self._buffer = 0, []
        self._files.unlock()
