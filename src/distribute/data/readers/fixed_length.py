"""FixedLengthRecordDataset: records of ``record_bytes`` bytes each, between a header and a footer.

Every file is ``header_bytes``, then records, then ``footer_bytes``. As in tf.data, a plain
file whose body is not a whole number of records raises InvalidArgumentError when it is
opened, and a compressed one DataLossError when its end is reached; a file shorter than its
header is a DataLossError here (tf.data reports an internal error).
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

from distribute.data._common import check_int
from distribute.data.readers._files import open_input
from distribute.data.readers._reader import FileReaderDataset, RecordReader
from distribute.errors import DataLossError, InvalidArgumentError

__all__ = ["FixedLengthRecordDataset"]

DEFAULT_BUFFER = 256 * 1024


def _body_error(kind: type, path: str, header: int, footer: int, body: int, record: int) -> Exception:
    return kind(
        f"Excluding the header ({header} bytes) and footer ({footer} bytes), input file \"{path}\" "
        f"has body length {body} bytes, which is not an exact multiple of the record length "
        f"({record} bytes)."
    )


class FixedLengthReader(RecordReader):
    """Reads the records of one file; ``offset`` counts from the start of the (uncompressed) file."""

    def __init__(self, dataset: "FixedLengthRecordDataset", path: str, offset: int) -> None:
        self._path, self._record = path, dataset.record_bytes
        self._header, self._footer = dataset.header_bytes, dataset.footer_bytes
        size = dataset.buffer_size if dataset.buffer_size and dataset.buffer_size > 0 else DEFAULT_BUFFER
        self._chunk = max(1, size // self._record) * self._record
        self._end: Optional[int] = None
        if not dataset.compression_type:
            self._end = self._plain_end(path)
        self.offset = max(offset, self._header)
        self._stream = open_input(path, dataset.compression_type, self.offset)
        self._pending = b""  # compressed files: bytes read that may be the footer

    def _plain_end(self, path: str) -> int:
        if not os.path.isfile(path):
            return 0  # open_input raises NotFoundError (or names the directory)
        size = os.path.getsize(path)
        body = size - self._header - self._footer
        if body < 0:
            raise DataLossError(f"The file {path!r} ({size} bytes) is shorter than its header and "
                                f"footer ({self._header} + {self._footer} bytes).")
        if body % self._record:
            raise _body_error(InvalidArgumentError, path, self._header, self._footer, body, self._record)
        return size - self._footer

    def _read_plain(self) -> bytes:
        assert self._end is not None  # plain files know their end
        want = min(self._chunk, self._end - self.offset)
        data = self._stream.read(want) if want > 0 else b""
        if len(data) < want:
            raise DataLossError(f"The file {self._path!r} ended at offset {self.offset + len(data)} "
                                f"inside a record (it changed while being read?).")
        return data

    def _read_compressed(self) -> bytes:
        chunk = self._stream.read(self._chunk)
        data = self._pending + chunk
        if chunk:
            usable = len(data) - self._footer
            usable = usable - usable % self._record if usable > 0 else 0
            self._pending = data[usable:]
            return data[:usable]
        self._pending = b""
        body = len(data) - self._footer
        if body < 0 or body % self._record:
            total = self.offset + body - self._header
            raise _body_error(DataLossError, self._path, self._header, self._footer, total, self._record)
        return data[:body]

    def next_block(self) -> Optional[Tuple[List[bytes], List[int]]]:
        while True:
            data = self._read_plain() if self._end is not None else self._read_compressed()
            if not data:
                if self._end is not None or not self._pending:
                    return None
                continue
            record, start = self._record, self.offset
            records = [data[i:i + record] for i in range(0, len(data), record)]
            offsets = list(range(start, start + len(data), record))
            self.offset = start + len(data)
            return records, offsets

    def close(self) -> None:
        self._stream.close()


def _non_negative(name: str, value: Any) -> int:
    value = 0 if value is None else check_int(name, value)
    if value < 0:
        raise InvalidArgumentError(f"`{name}` must be >= 0; received {name}={value}.")
    return value


class FixedLengthRecordDataset(FileReaderDataset):
    """Fixed-length records of files, as ``bytes`` (``tf.data.FixedLengthRecordDataset``).

    Args:
        filenames: a file name, a list of file names, or a Dataset of file names.
        record_bytes: the length of every record (> 0).
        header_bytes: bytes to skip at the start of each file (default 0).
        footer_bytes: bytes to ignore at the end of each file (default 0).
        buffer_size: bytes read at a time (default 256 KiB).
        compression_type: None or "" (plain), "ZLIB" or "GZIP".
        num_parallel_reads: files read at a time, their records interleaved (default 1).

    Example:
        >>> images = FixedLengthRecordDataset("cifar.bin", record_bytes=3073)
    """

    _op = "fixed_length_record"

    def __init__(self, filenames: Any, record_bytes: int, header_bytes: Optional[int] = None,
                 footer_bytes: Optional[int] = None, buffer_size: Optional[int] = None,
                 compression_type: Optional[str] = None, num_parallel_reads: Optional[int] = None,
                 name: Optional[str] = None) -> None:
        self.record_bytes = check_int("record_bytes", record_bytes)
        if self.record_bytes <= 0:
            raise InvalidArgumentError(f"`record_bytes` must be > 0; received record_bytes={self.record_bytes}.")
        self.header_bytes = _non_negative("header_bytes", header_bytes)
        self.footer_bytes = _non_negative("footer_bytes", footer_bytes)
        super().__init__(filenames, compression_type, buffer_size, num_parallel_reads, name)

    def _open_reader(self, path: str, offset: int) -> RecordReader:
        return FixedLengthReader(self, path, offset)
