"""TFRecordDataset: the records of TFRecord files, every checksum verified.

A TFRecord file is a sequence of records, each framed as::

    uint64 length (little endian) | uint32 masked CRC-32C of the length bytes
    data (length bytes)           | uint32 masked CRC-32C of the data

The reader takes the file in blocks of ``buffer_size`` bytes (256 KiB by default), splits
the records of a block (at once, with numpy, while consecutive records have the same
length), and verifies their checksums with :mod:`~distribute.data.readers.crc32c`
(hardware CRC-32C, ``map`` of one call per record over the records' bytes; a header's checksum depends only on
its length, so it is computed once per distinct length of a block and compared with numpy).
A checksum mismatch raises :class:`~distribute.errors.DataLossError` naming the file and
the offset of the record; so does a file that ends inside a record. Records before the bad
one are delivered first.

Everything runs in the consumer's thread: a read-ahead thread was measured to slow the
pipeline down (the splitting and slicing are Python code that competes for the GIL).
"""

from __future__ import annotations

import struct
from typing import Any, List, Optional, Tuple

import numpy as np

from distribute.data.readers._files import open_input
from distribute.data.readers._reader import FileReaderDataset, RecordReader
from distribute.data.readers.crc32c import crc32c_many, mask, masked_crc32c
from distribute.errors import DataLossError

__all__ = ["TFRecordDataset", "TFRecordReader"]

DEFAULT_BUFFER = 256 * 1024
_HEADER = 12
_FOOTER = 4
_U64 = struct.Struct("<Q")
# records, their offsets, an error after them, the offset of the next record, whether it is the last
_Block = Tuple[List[bytes], List[int], Optional[BaseException], int, bool]


def _corrupt(path: str, offset: int, what: str) -> DataLossError:
    return DataLossError(
        f"Corrupted record at offset {offset} in {path}: the {what} checksum does not match. "
        f"The file is damaged; restore it from its source, or skip it by removing it from the "
        f"file list."
    )


def _truncated(path: str, offset: int, detail: str) -> DataLossError:
    return DataLossError(
        f"Truncated record at offset {offset} in {path}: {detail}. The file ends inside a "
        f"record; it was cut short (an interrupted copy or write?)."
    )


def _arrays(starts: List[int], lengths: List[int]) -> Tuple[np.ndarray, np.ndarray]:
    return np.array(starts, dtype=np.int64), np.array(lengths, dtype=np.int64)


def _u32_at(buffer: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Little-endian uint32 values stored at byte ``positions``."""
    index = positions[:, None] + np.arange(4)
    return buffer[index].astype(np.uint32) @ np.array([1, 1 << 8, 1 << 16, 1 << 24], dtype=np.uint32)


def _header_crcs(lengths: np.ndarray) -> np.ndarray:
    """The masked CRCs the headers of records of ``lengths`` must carry.

    A header's checksum covers only its 8 length bytes, so it is a function of the length:
    one CRC per distinct length checks all the headers of a block.
    """
    if bool((lengths == lengths[0]).all()):
        return np.full(len(lengths), masked_crc32c(_U64.pack(int(lengths[0]))), dtype=np.uint32)
    unique, inverse = np.unique(lengths, return_inverse=True)
    values = np.array([masked_crc32c(_U64.pack(n)) for n in unique.tolist()], dtype=np.uint32)
    return values[inverse]


class _BlockParser:
    """Turns the bytes of a file, block by block, into verified records."""

    def __init__(self, path: str, stream: Any, offset: int, block: int) -> None:
        self._path, self._stream, self._block = path, stream, block
        self._data = b""  # bytes read but not parsed; self._base is the offset of _data[0]
        self._base = offset

    def parse(self) -> _Block:
        """The next block's records; an error (a DataLossError, an OSError) or the end of
        the file makes it the last block."""
        try:
            return self._parse()
        except Exception as exc:  # noqa: BLE001  delivered to the consumer after earlier records
            return [], [], exc, self._base, True

    def _parse(self) -> _Block:
        chunk = self._stream.read(self._block)
        self._data += chunk
        at_end = not chunk
        starts, lengths, end, error = self._split()
        records, offsets, bad = self._verify(starts, lengths)
        next_offset = self._base + end
        if bad is not None:
            error, next_offset = bad, self._base + int(starts[len(records)])
        elif at_end and error is None and len(self._data) > end:
            error = self._tail_error(end)
        self._data, self._base = self._data[end:], self._base + end
        return records, offsets, error, next_offset, at_end or error is not None

    def _split(self) -> "tuple[np.ndarray, np.ndarray, int, Optional[DataLossError]]":
        """Starts (in _data) and lengths of the complete records, bytes used, a header error."""
        data, size, pos = self._data, len(self._data), 0
        starts: List[int] = []
        lengths: List[int] = []
        while pos + _HEADER <= size:
            (length,) = _U64.unpack_from(data, pos)
            run = self._uniform_run(pos, length)
            if run > 1:
                starts.extend(range(pos, pos + run * (length + 16), length + 16))
                lengths.extend([length] * run)
                pos += run * (length + 16)
                continue
            if pos + _HEADER + length + _FOOTER > size:
                return _arrays(starts, lengths) + (pos, self._check_header(pos))
            starts.append(pos)
            lengths.append(length)
            pos += _HEADER + length + _FOOTER
        return _arrays(starts, lengths) + (pos, None)

    def _uniform_run(self, pos: int, length: int) -> int:
        """How many complete records from ``pos`` on have the same length (read with numpy)."""
        stride = length + 16
        count = (len(self._data) - pos) // stride
        if count < 2:
            return 0
        lengths = np.ndarray((count,), dtype="<u8", buffer=self._data, offset=pos, strides=(stride,))
        differ = np.flatnonzero(lengths != length)
        return int(differ[0]) if len(differ) else count

    def _check_header(self, pos: int) -> Optional[DataLossError]:
        """Verifies one header before waiting for a long record (a bad length must not be trusted)."""
        stored = struct.unpack_from("<I", self._data, pos + 8)[0]
        if masked_crc32c(self._data[pos:pos + 8]) != stored:
            return _corrupt(self._path, self._base + pos, "length")
        return None

    def _verify(self, starts: np.ndarray, lengths: np.ndarray) -> Tuple[List[bytes], List[int], Any]:
        """The verified records (those before the first bad one), their offsets, the error."""
        if len(starts) == 0:
            return [], [], None
        data = self._data
        buffer = np.frombuffer(data, dtype=np.uint8)
        header_ok = _header_crcs(lengths) == _u32_at(buffer, starts + 8)
        ends = starts + _HEADER + lengths
        records = [data[a:b] for a, b in zip((starts + _HEADER).tolist(), ends.tolist())]
        data_ok = mask(crc32c_many(records)) == _u32_at(buffer, ends)
        bad = np.flatnonzero(~(header_ok & data_ok))
        count = int(bad[0]) if len(bad) else len(starts)
        error = None
        if len(bad):
            what = "length" if not header_ok[count] else "data"
            error = _corrupt(self._path, self._base + int(starts[count]), what)
        return records[:count], (starts[:count] + self._base).tolist(), error

    def _tail_error(self, end: int) -> DataLossError:
        offset, size = self._base + end, len(self._data) - end
        if size < _HEADER:
            return _truncated(self._path, offset, f"only {size} of the {_HEADER} header bytes are present")
        (length,) = _U64.unpack_from(self._data, end)
        return _truncated(
            self._path, offset, f"the header announces {length} data bytes but only "
            f"{max(size - _HEADER, 0)} bytes (with the checksum) follow"
        )


class TFRecordReader(RecordReader):
    """Reads and verifies the records of one TFRecord file."""

    def __init__(self, path: str, compression: str, offset: int, block: int) -> None:
        self._stream = open_input(path, compression, offset)
        self._parser = _BlockParser(path, self._stream, offset, block)
        self._error: Optional[BaseException] = None
        self._ended = False
        self.offset = offset

    def next_block(self) -> Optional[Tuple[List[bytes], List[int]]]:
        while True:
            if self._error is not None:
                raise self._error
            if self._ended:
                return None
            records, offsets, self._error, self.offset, self._ended = self._parser.parse()
            if records:
                return records, offsets

    def close(self) -> None:
        self._stream.close()


class TFRecordDataset(FileReaderDataset):
    """Records of TFRecord files, as ``bytes`` (``tf.data.TFRecordDataset``).

    Args:
        filenames: a file name, a list of file names, or a Dataset of file names.
        compression_type: None or "" (plain), "ZLIB" or "GZIP".
        buffer_size: bytes read at a time (default 256 KiB).
        num_parallel_reads: files read at a time, their records interleaved (default 1).

    Example:
        >>> with TFRecordWriter("/tmp/x.tfrecord") as writer:
        ...     writer.write(b"hello")
        >>> list(TFRecordDataset("/tmp/x.tfrecord"))
        [b'hello']
    """

    _op = "tfrecord"

    def _open_reader(self, path: str, offset: int) -> RecordReader:
        block = self.buffer_size if self.buffer_size and self.buffer_size > 0 else DEFAULT_BUFFER
        return TFRecordReader(path, self.compression_type, offset, block)
