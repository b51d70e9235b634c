"""CRC-32C and TFRecord's masked CRC: the crc32c package path and the numpy fallback agree
with published test vectors."""

import os

import numpy as np
import pytest

from distribute.data.readers import _crc32c_numpy, crc32c

# (data, CRC-32C): RFC 3720 (iSCSI) B.4 vectors and the usual check value
VECTORS = [
    (b"123456789", 0xE3069283),
    (b"", 0x00000000),
    (b"\x00" * 32, 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
]
# masked CRCs TensorFlow stores: an empty record, and the 8-byte length of an empty record
MASKED = [(b"", 0xA282EAD8), (b"\x00" * 8, 0x07980329)]


@pytest.mark.parametrize("data,expected", VECTORS)
def test_module_crc_matches_the_vectors(data, expected):
    assert crc32c.crc32c(data) == expected
    assert crc32c.crc32c(memoryview(data)) == expected


@pytest.mark.parametrize("data,expected", VECTORS)
def test_numpy_fallback_matches_the_vectors(data, expected):
    assert _crc32c_numpy.crc32c(data) == expected
    buffer = np.frombuffer(b"xy" + data, dtype=np.uint8)
    assert int(_crc32c_numpy.crc32c_ranges(buffer, [2], [len(data)])[0]) == expected


@pytest.mark.parametrize("data,expected", VECTORS)
def test_package_matches_the_vectors(data, expected):
    package = pytest.importorskip("crc32c")
    assert package.crc32c(data) == expected
    assert crc32c.HARDWARE  # the module uses the package when it can be imported


@pytest.mark.parametrize("data,expected", MASKED)
def test_masked_form_as_tfrecord_stores_it(data, expected):
    assert crc32c.masked_crc32c(data) == expected
    assert int(crc32c.mask(np.uint32(_crc32c_numpy.crc32c(data)))) == expected


def test_integer_and_numpy_masking_agree():
    # masked_crc32c masks with Python integers, the reader with numpy arrays
    records = [os.urandom(n) for n in (1, 8, 255, 256, 4097)] * 20 + [os.urandom(9) for _ in range(200)]
    crcs = np.array([crc32c.crc32c(r) for r in records], dtype=np.uint32)
    assert crc32c.mask(crcs).tolist() == [crc32c.masked_crc32c(r) for r in records]


def test_crc_of_many_pieces_matches_the_single_crc():
    pieces = [os.urandom(n) for n in (0, 1, 3, 8, 300, 4096, 256, 256)]
    expected = [_crc32c_numpy.crc32c(p) for p in pieces]
    assert crc32c.crc32c_many(pieces).tolist() == expected
    assert crc32c.crc32c_many([]).tolist() == []
