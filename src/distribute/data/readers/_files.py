"""Opening data files: compression, file-name inputs, and errors that name the file.

``compression_type`` is ``None``/``""`` (plain), ``"ZLIB"`` (a zlib stream with its header,
as tf.io writes it) or ``"GZIP"``. Offsets used in iterator states are offsets in the
uncompressed stream; restoring into a compressed file decompresses up to that offset.
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import Any, BinaryIO

import numpy as np

from distribute.errors import DataLossError, InvalidArgumentError, NotFoundError

__all__ = ["check_compression", "open_input", "open_output", "path_of"]

_COMPRESSIONS = ("", "ZLIB", "GZIP")


def check_compression(compression_type: Any) -> str:
    """Normalises ``compression_type`` to "", "ZLIB" or "GZIP"."""
    value = "" if compression_type is None else compression_type
    if not isinstance(value, str) or value.upper() not in _COMPRESSIONS:
        raise InvalidArgumentError(
            f"Expected `compression_type` to be None, '', 'ZLIB' or 'GZIP'; received "
            f"compression_type={compression_type!r}."
        )
    return value.upper()


def path_of(name: Any) -> str:
    """A file name element (bytes, str, or a 0-d string array) as a str path."""
    if isinstance(name, np.ndarray):
        name = name.item()
    if isinstance(name, bytes):
        return os.fsdecode(name)
    if isinstance(name, (str, os.PathLike)):
        return os.fspath(name)
    raise TypeError(f"Expected a file name (a string); received {name!r:.100} of type {type(name).__name__}.")


class _ZlibReader:
    """``read(n)`` over a zlib-compressed file."""

    def __init__(self, raw: BinaryIO, path: str) -> None:
        self._raw, self._path = raw, path
        self._inflate = zlib.decompressobj()
        self._pending = b""

    def read(self, n: int) -> bytes:
        while len(self._pending) < n and not self._inflate.eof:
            chunk = self._raw.read(max(n, 1 << 16))
            try:
                self._pending += self._inflate.decompress(chunk) if chunk else self._inflate.flush()
            except zlib.error as exc:
                raise DataLossError(f"Corrupt ZLIB data in {self._path!r}: {exc}.") from exc
            if not chunk:
                if not self._inflate.eof:
                    raise DataLossError(f"Truncated ZLIB stream in {self._path!r}: the file ends mid-stream.")
                break
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    def close(self) -> None:
        self._raw.close()


class _GzipReader:
    """``read(n)`` over a gzip file, with corrupt or truncated data as DataLossError."""

    def __init__(self, raw: BinaryIO, path: str) -> None:
        self._file, self._path = gzip.GzipFile(fileobj=raw, mode="rb"), path
        self._raw = raw

    def read(self, n: int) -> bytes:
        try:
            return self._file.read(n)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataLossError(f"Corrupt or truncated GZIP data in {self._path!r}: {exc}.") from exc

    def close(self) -> None:
        self._file.close()
        self._raw.close()


def open_input(path: str, compression: str, offset: int = 0) -> Any:
    """Opens ``path`` for reading at uncompressed ``offset``; NotFoundError if it is missing."""
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(f"{path}: No such file or directory (listed as an input file).") from None
    except IsADirectoryError:
        raise InvalidArgumentError(f"{path} is a directory, not a data file.") from None
    except PermissionError as exc:
        raise NotFoundError(f"{path}: cannot be read ({exc}).") from None
    if not compression:
        raw.seek(offset)
        return raw
    stream = _ZlibReader(raw, path) if compression == "ZLIB" else _GzipReader(raw, path)
    while offset > 0:
        skipped = len(stream.read(min(offset, 1 << 20)))
        if skipped == 0:
            raise DataLossError(f"{path} is shorter than the saved offset {offset}; the file changed.")
        offset -= skipped
    return stream


class _ZlibWriter:
    def __init__(self, raw: BinaryIO) -> None:
        self._raw, self._deflate = raw, zlib.compressobj()

    def write(self, data: bytes) -> None:
        self._raw.write(self._deflate.compress(data))

    def flush(self) -> None:
        self._raw.write(self._deflate.flush(zlib.Z_SYNC_FLUSH))
        self._raw.flush()

    def close(self) -> None:
        self._raw.write(self._deflate.flush())
        self._raw.close()


class _GzipWriter:
    def __init__(self, raw: BinaryIO) -> None:
        self._raw, self._file = raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)

    def write(self, data: bytes) -> None:
        self._file.write(data)

    def flush(self) -> None:
        self._file.flush()
        self._raw.flush()

    def close(self) -> None:
        self._file.close()
        self._raw.close()


def open_output(path: str, compression: str) -> Any:
    """Opens ``path`` for writing, compressed as asked."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise NotFoundError(f"Cannot create {path!r}: the directory {directory!r} does not exist.")
    raw = open(path, "wb")
    if compression == "GZIP":
        return _GzipWriter(raw)
    if compression == "ZLIB":
        return _ZlibWriter(raw)
    return raw
