"""TFRecordWriter: writes records in the TFRecord framing that TFRecordDataset reads.

Files it writes are byte-for-byte what ``tf.io.TFRecordWriter`` writes for the same records
without compression, and readable by TensorFlow with ZLIB or GZIP compression.
"""

from __future__ import annotations

import os
import struct
from typing import Any, Optional

from distribute.data.readers._files import check_compression, open_output
from distribute.data.readers.crc32c import masked_crc32c
from distribute.errors import FailedPreconditionError

__all__ = ["TFRecordWriter"]


def _compression_of(options: Any) -> str:
    if options is None or isinstance(options, str):
        return check_compression(options)
    if hasattr(options, "compression_type"):
        return check_compression(options.compression_type)
    raise TypeError(
        f"Expected `options` to be None, a compression type ('', 'ZLIB', 'GZIP') or an object "
        f"with a `compression_type`; received {options!r}."
    )


def frame(record: bytes) -> bytes:
    """One record in the TFRecord framing."""
    header = struct.pack("<Q", len(record))
    return b"".join((header, struct.pack("<I", masked_crc32c(header)), record,
                     struct.pack("<I", masked_crc32c(record))))


class TFRecordWriter:
    """Writes TFRecord files (``tf.io.TFRecordWriter``); use it as a context manager.

    Example:
        >>> with TFRecordWriter("/tmp/data.tfrecord", "GZIP") as writer:
        ...     for i in range(3):
        ...         writer.write(b"record %d" % i)
    """

    def __init__(self, path: Any, options: Any = None) -> None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"Expected `path` to be a file name; received {path!r}.")
        self.path = os.fsdecode(os.fspath(path))
        self._file: Optional[Any] = open_output(self.path, _compression_of(options))

    def write(self, record: Any) -> None:
        """Appends one record (bytes; a str is written as UTF-8)."""
        if self._file is None:
            raise FailedPreconditionError(f"The TFRecordWriter for {self.path!r} is closed.")
        if isinstance(record, str):
            record = record.encode()
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"Expected a record of bytes (or str); received {type(record).__name__}. Serialize "
                f"tensors first, for example `tensor.numpy().tobytes()`."
            )
        self._file.write(frame(bytes(record)))

    def flush(self) -> None:
        """Pushes written records to the file."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Finishes the file (required for compressed files)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001  never raise from a finalizer
            pass
