"""The pure numpy CRC-32C (the fallback when the crc32c package is missing), called directly."""

import os
import random

import numpy as np

from distribute.data.readers import _crc32c_numpy as crc


def _reference(data: bytes) -> int:
    value = 0xFFFFFFFF
    for byte in data:
        value ^= byte
        for _ in range(8):
            value = (value >> 1) ^ 0x82F63B78 if value & 1 else value >> 1
    return value ^ 0xFFFFFFFF


def test_known_values():
    assert crc.crc32c(b"123456789") == 0xE3069283
    assert crc.crc32c(b"") == 0
    assert crc.crc32c(b"\x00" * 32) == 0x8A9136AA


def test_against_the_bitwise_reference_for_all_sizes():
    rng = random.Random(0)
    for length in list(range(0, 12)) + [255, 256, 257, 511, 512, 513, 1023, 1024, 1500, 3000]:
        data = bytes(rng.getrandbits(8) for _ in range(length))
        assert crc.crc32c(data) == _reference(data), length


def test_ranges_of_mixed_lengths():
    rng = random.Random(1)
    data = os.urandom(20000)
    buffer = np.frombuffer(data, dtype=np.uint8)
    starts = [rng.randrange(0, 10000) for _ in range(120)]
    lengths = [rng.choice([0, 3, 8, rng.randrange(0, 300), rng.randrange(300, 2000)]) for _ in starts]
    out = crc.crc32c_ranges(buffer, starts, lengths)
    assert [int(v) for v in out] == [_reference(data[s:s + n]) for s, n in zip(starts, lengths)]
    uniform = crc.crc32c_ranges(buffer, starts, [1200] * len(starts))
    assert [int(v) for v in uniform] == [_reference(data[s:s + 1200]) for s in starts]


def _table_reference(data: bytes) -> int:
    table = _TABLE
    value = 0xFFFFFFFF
    for byte in data:
        value = (value >> 8) ^ table[(value ^ byte) & 0xFF]
    return value ^ 0xFFFFFFFF


_TABLE = []
for _b in range(256):
    _v = _b
    for _ in range(8):
        _v = (_v >> 1) ^ 0x82F63B78 if _v & 1 else _v >> 1
    _TABLE.append(_v)


def test_uniform_records_over_several_groups_and_threads():
    # more bytes than one vectorised group, so the work arrays are reused group after group,
    # and the same from several threads at once (each thread has its own work arrays)
    import threading

    length, stride = 300, 316
    count = 3 * crc._GROUP_BYTES // length + 7
    data = os.urandom(count * stride)
    buffer = np.frombuffer(data, dtype=np.uint8)
    starts = np.arange(count) * stride + 12
    expected = [_table_reference(data[s:s + length]) for s in starts.tolist()]
    results = {}

    def work(k: int) -> None:
        results[k] = [int(v) for v in crc.crc32c_ranges(buffer, starts, [length] * count)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[k] == expected for k in range(3))
    short = crc.crc32c_ranges(buffer, starts[:5], [length] * 5)  # smaller than the kept arrays
    assert [int(v) for v in short] == expected[:5]


def test_long_records_do_not_grow_the_kept_work_arrays():
    data = os.urandom(3 * crc._GROUP_BYTES)
    buffer = np.frombuffer(data, dtype=np.uint8)
    crc._SCRATCH.arrays(4, 64)  # this thread's arrays exist
    before = crc._SCRATCH.index.size
    out = crc.crc32c_ranges(buffer, [0, 5], [len(data) - 5, len(data) - 5])
    assert [int(v) for v in out] == [_table_reference(data[:-5]), _table_reference(data[5:])]
    assert crc._SCRATCH.index.size == before
