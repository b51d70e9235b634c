"""CRC-32C (Castagnoli) vectorised with numpy: the fallback when the ``crc32c`` package is missing.

:mod:`distribute.data.readers.crc32c` uses the ``crc32c`` package (hardware instructions)
when it can be imported, and this module otherwise; the tests check both against the same
test vectors.

The checksum of every record of a file must be verified, and a byte-at-a-time loop in Python
costs about 100 ns per byte. Instead the CRC is computed as the linear function it is: with a
zero initial register, the CRC of a message is the XOR, over its bytes, of a table entry
indexed by the byte's value and its distance from the end of the message. Messages are split
into blocks of :data:`BLOCK` bytes (right-aligned; leading zero bytes do not change a
zero-initialised CRC), each block's contribution is one table gather and one XOR-reduction
for all blocks of all records at once, and the blocks of a record are then combined pairwise
with precomputed "shift by n zero bytes" tables. The standard initial value 0xFFFFFFFF is
the same as complementing the first four bytes of the message. Records of one length are
processed 256 KiB at a time in work arrays kept per thread: few numpy calls per block of a
file, and no fresh large arrays (those are returned to the system and cost page faults that
tripled the time). About 0.6 us per 256-byte record (1.0 us with 32 KiB groups), on the
machines of performance.md.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Optional, Sequence, Tuple, Union

import numpy as np

__all__ = ["crc32c", "crc32c_ranges"]

_POLY = 0x82F63B78
BLOCK = 32  # bytes per block: the positional table (32 x 256 x 4 bytes) stays in L1 cache
_GROUP_BYTES = 262144  # bytes of records per vectorised pass (work arrays reused per thread)


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_TABLE = _byte_table()


def _shift(values: np.ndarray) -> np.ndarray:
    """The register after one more zero byte."""
    return (values >> 8) ^ _TABLE[values & 0xFF]


def _positional_tables() -> np.ndarray:
    tables = np.empty((BLOCK, 256), dtype=np.uint32)
    tables[0] = _TABLE
    for d in range(1, BLOCK):
        tables[d] = _shift(tables[d - 1])
    return tables


_POS = _positional_tables()  # _POS[d][b]: contribution of byte b followed by d bytes
_POS_FLAT = _POS.reshape(-1)


@lru_cache(maxsize=None)
def _shift_tables(zero_bytes: int) -> np.ndarray:
    """Tables (4, 256) applying ``zero_bytes`` (BLOCK times a power of two) zero bytes."""
    if zero_bytes == BLOCK:
        return np.stack([_POS[BLOCK - 1 - k] for k in range(4)])
    half = _shift_tables(zero_bytes // 2)
    return np.stack([_apply_shift(half, half[k]) for k in range(4)])


def _apply_shift(tables: np.ndarray, values: np.ndarray) -> np.ndarray:
    return (tables[0][values & 0xFF] ^ tables[1][(values >> 8) & 0xFF]
            ^ tables[2][(values >> 16) & 0xFF] ^ tables[3][values >> 24])


def _combine(blocks: np.ndarray) -> np.ndarray:
    """Combines per-block CRCs (records x blocks, first block first) into per-record CRCs."""
    width = BLOCK
    while blocks.shape[1] > 1:
        if blocks.shape[1] % 2:  # a zero block in front is a run of leading zero bytes
            blocks = np.concatenate([np.zeros((len(blocks), 1), dtype=np.uint32), blocks], axis=1)
        blocks = _apply_shift(_shift_tables(width), blocks[:, 0::2]) ^ blocks[:, 1::2]
        width *= 2
    return blocks[:, 0]


def crc32c_ranges(
    buffer: np.ndarray,
    starts: Union[np.ndarray, Sequence[int]],
    lengths: Union[np.ndarray, Sequence[int]],
) -> np.ndarray:
    """CRC-32C of ``buffer[starts[i]:starts[i] + lengths[i]]`` for every i (uint32 array)."""
    first = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(lengths, dtype=np.int64)
    out = np.zeros(len(first), dtype=np.uint32)
    short = sizes < 4
    for i in np.flatnonzero(short):
        out[i] = _crc_bytewise(buffer[first[i]:first[i] + sizes[i]])
    rest = np.flatnonzero(~short)
    if len(rest) == 0:
        return out
    if len(rest) == len(first) and bool((sizes == sizes[0]).all()):
        out[:] = _crc_uniform(buffer, first, int(sizes[0]))
    else:
        out[rest] = _crc_varying(buffer, first[rest], sizes[rest])
    return out


def _blocks_value(index: np.ndarray, contributions: Optional[np.ndarray] = None) -> np.ndarray:
    """Per-record CRCs from table indices (records x span; span a multiple of BLOCK if > BLOCK).

    ``contributions``, if given, is a uint32 array of the same shape to gather into (reused
    memory instead of a fresh array).
    """
    records, span = index.shape
    contributions = np.take(_POS_FLAT, index, out=contributions)
    if span <= BLOCK:
        return np.bitwise_xor.reduce(contributions, axis=1) ^ np.uint32(0xFFFFFFFF)
    per_block = np.bitwise_xor.reduce(contributions.reshape(records, span // BLOCK, BLOCK), axis=2)
    return _combine(per_block) ^ np.uint32(0xFFFFFFFF)


def _span(length: int) -> int:
    return length if length <= BLOCK else -(-length // BLOCK) * BLOCK


@lru_cache(maxsize=64)
def _distance(span: int) -> np.ndarray:
    """Row of table offsets (distance within the block << 8) for records right-aligned in span."""
    if span <= BLOCK:
        return ((span - 1 - np.arange(span)) << 8).astype(np.uint16)
    return np.tile(((BLOCK - 1 - np.arange(BLOCK)) << 8).astype(np.uint16), span // BLOCK)


def _rows(buffer: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """The records as a (records x length) uint8 array, a strided view when evenly spaced."""
    if len(starts) == 1:
        return buffer[starts[0]:starts[0] + length][None, :]
    stride = int(starts[1] - starts[0])
    if stride >= length and bool((np.diff(starts) == stride).all()):
        base = buffer[starts[0]:]
        return np.lib.stride_tricks.as_strided(base, (len(starts), length), (stride, 1), writeable=False)
    if length >= 1024:
        return np.stack([buffer[s:s + length] for s in starts.tolist()])
    return buffer[starts[:, None] + np.arange(length)]


class _Scratch(threading.local):
    """Work arrays kept per thread, so that large groups reuse memory (fresh large arrays are
    returned to the system and cost page faults on every use)."""

    def __init__(self) -> None:
        self.index = np.empty(0, dtype=np.uint16)
        self.contributions = np.empty(0, dtype=np.uint32)

    def arrays(self, records: int, span: int) -> Tuple[np.ndarray, np.ndarray]:
        size = records * span
        if size > _GROUP_BYTES:  # one long record: fresh arrays, not kept (no memory held)
            return np.empty((records, span), dtype=np.uint16), np.empty((records, span), dtype=np.uint32)
        if self.index.size < size:
            self.index = np.empty(size, dtype=np.uint16)
            self.contributions = np.empty(size, dtype=np.uint32)
        return self.index[:size].reshape(records, span), self.contributions[:size].reshape(records, span)


_SCRATCH = _Scratch()


def _crc_uniform(buffer: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """CRCs of records that all have ``length`` (>= 4) bytes, a group of rows at a time."""
    span = _span(length)
    group = max(1, _GROUP_BYTES // span)
    if len(starts) > group:
        return np.concatenate([_crc_uniform(buffer, starts[i:i + group], length)
                               for i in range(0, len(starts), group)])
    pad = span - length
    index, contributions = _SCRATCH.arrays(len(starts), span)
    index[:, :pad] = 0
    index[:, pad:] = _rows(buffer, starts, length)
    index[:, pad:pad + 4] ^= 0xFF  # initial register 0xFFFFFFFF
    index |= _distance(span)
    return _blocks_value(index, contributions)


def _crc_varying(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRCs of records of different lengths (>= 4): one group per padded span."""
    out = np.zeros(len(starts), dtype=np.uint32)
    blocks = -(-lengths // BLOCK)
    spans = np.where(blocks <= 1, 1 << np.ceil(np.log2(lengths)).astype(np.int64),
                     (1 << np.ceil(np.log2(np.maximum(blocks, 1))).astype(np.int64)) * BLOCK)
    for span in np.unique(spans):
        members = np.flatnonzero(spans == span)
        step = max(1, _GROUP_BYTES // int(span))
        for i in range(0, len(members), step):
            group = members[i:i + step]
            out[group] = _crc_aligned(buffer, starts[group], lengths[group], int(span))
    return out


def _crc_aligned(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray, span: int) -> np.ndarray:
    """CRCs of records right-aligned in rows of ``span`` bytes (leading zeros change nothing)."""
    columns = np.arange(span, dtype=np.int64)
    offsets = columns[None, :] - (span - lengths)[:, None]
    valid = offsets >= 0
    index = np.where(valid, buffer[np.where(valid, starts[:, None] + offsets, 0)], 0).astype(np.uint16)
    index[valid & (offsets < 4)] ^= 0xFF  # initial register 0xFFFFFFFF
    index |= _distance(span)
    return _blocks_value(index)


def _crc_bytewise(data: np.ndarray) -> int:
    crc = 0xFFFFFFFF
    for byte in bytes(data):
        crc = (crc >> 8) ^ int(_TABLE[(crc ^ byte) & 0xFF])
    return crc ^ 0xFFFFFFFF


def crc32c(data: bytes) -> int:
    """The CRC-32C of ``data``.

    Example:
        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    return int(crc32c_ranges(buffer, [0], [len(data)])[0])

