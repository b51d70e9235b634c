"""CRC-32C (Castagnoli) and the masked form TFRecord files use.

The checksums come from the ``crc32c`` package (a dependency: SSE4.2 / ARMv8 CRC
instructions, about 0.1-0.2 us per call on a 256-byte record). Only when that package cannot
be imported (a platform without a wheel and without a compiler) does this module fall back to
the pure numpy implementation of :mod:`distribute.data.readers._crc32c_numpy` (vectorised
over many records: about 0.6 us per 256-byte record). :data:`HARDWARE` says which one is used.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from distribute.data.readers import _crc32c_numpy

__all__ = ["HARDWARE", "crc32c", "crc32c_many", "mask", "masked_crc32c"]

_MASK_DELTA = 0xA282EAD8

try:
    from crc32c import crc32c as _package_crc32c
except ImportError:  # the pure fallback
    HARDWARE = False
    _crc: Callable[[bytes], int] = _crc32c_numpy.crc32c
else:
    HARDWARE = True
    _crc = _package_crc32c


def crc32c(data: bytes) -> int:
    """The CRC-32C of ``data`` (bytes, bytearray or memoryview).

    Example:
        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
    """
    return _crc(data)


def crc32c_many(pieces: Sequence[bytes]) -> np.ndarray:
    """The CRC-32C of every piece (a uint32 array).

    With the package this is ``map`` of its function over the pieces (no Python-level loop);
    the fallback joins the pieces and computes all their CRCs at once with numpy.
    """
    if HARDWARE:
        return np.fromiter(map(_package_crc32c, pieces), dtype=np.uint32, count=len(pieces))
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    starts = np.cumsum(lengths) - lengths
    buffer = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    return _crc32c_numpy.crc32c_ranges(buffer, starts, lengths)


def mask(crc: np.ndarray) -> np.ndarray:
    """The TFRecord masking of CRCs: rotate right by 15 bits, add 0xA282EAD8 (mod 2**32)."""
    crc = np.asarray(crc, dtype=np.uint64)
    rotated = ((crc >> np.uint64(15)) | (crc << np.uint64(17))) & np.uint64(0xFFFFFFFF)
    return ((rotated + np.uint64(_MASK_DELTA)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def masked_crc32c(data: bytes) -> int:
    """The masked CRC-32C that TFRecord stores after the length and after the data."""
    crc = _crc(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF
