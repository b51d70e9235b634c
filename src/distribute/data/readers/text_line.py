"""TextLineDataset: the lines of text files, as ``bytes`` without their line ending.

Lines end at ``\\n``; a ``\\r`` before it is removed too, and a last line without a line ending
is kept (as tf.data does).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from distribute.data.readers._files import open_input
from distribute.data.readers._reader import FileReaderDataset, RecordReader

__all__ = ["TextLineDataset"]

DEFAULT_BUFFER = 256 * 1024


class TextLineReader(RecordReader):
    """Reads the lines of one text file."""

    def __init__(self, path: str, compression: str, offset: int, block: int) -> None:
        self._stream = open_input(path, compression, offset)
        self._block = block
        self._partial = b""
        self._eof = False
        self.offset = offset  # start of self._partial

    def next_block(self) -> Optional[Tuple[List[bytes], List[int]]]:
        while not self._eof:
            chunk = self._stream.read(self._block)
            if not chunk:
                self._eof = True
                if self._partial:
                    last, self._partial = self._partial, b""
                    return self._lines([last], terminated=False)
                return None
            pieces = (self._partial + chunk).split(b"\n")
            self._partial = pieces.pop()
            if pieces:
                return self._lines(pieces, terminated=True)
        return None

    def _lines(self, pieces: List[bytes], terminated: bool) -> Tuple[List[bytes], List[int]]:
        """The lines without their endings, and their offsets; advances ``offset`` past them."""
        offsets, position = [], self.offset
        for piece in pieces:
            offsets.append(position)
            position += len(piece) + 1
        self.offset = position if terminated else position - 1
        return [p[:-1] if p.endswith(b"\r") else p for p in pieces], offsets

    def close(self) -> None:
        self._stream.close()


class TextLineDataset(FileReaderDataset):
    """Lines of text files, as ``bytes`` (``tf.data.TextLineDataset``).

    Args:
        filenames: a file name, a list of file names, or a Dataset of file names.
        compression_type: None or "" (plain), "ZLIB" or "GZIP".
        buffer_size: bytes read at a time (default 256 KiB).
        num_parallel_reads: files read at a time, their lines interleaved (default 1).

    Example:
        >>> lines = TextLineDataset(["a.txt", "b.txt"]).map(lambda line: len(line))
    """

    _op = "text_line"

    def _open_reader(self, path: str, offset: int) -> RecordReader:
        block = self.buffer_size if self.buffer_size and self.buffer_size > 0 else DEFAULT_BUFFER
        return TextLineReader(path, self.compression_type, offset, block)
