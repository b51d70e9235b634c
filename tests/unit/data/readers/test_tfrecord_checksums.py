"""TFRecordDataset verifies every header and data checksum (hardware CRC-32C or the fallback):
a damaged stored checksum or data byte of any record of a block is a DataLossError."""

import os

import pytest

from distribute.data import TFRecordDataset, TFRecordWriter
from distribute.errors import DataLossError


def _write(path, records):
    with TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def _offsets(records):
    out, pos = [], 0
    for record in records:
        out.append(pos)
        pos += 16 + len(record)
    return out


UNIFORM = [os.urandom(256) for _ in range(3000)]  # more than one 256 KiB block
MIXED = [os.urandom(n) for n in (5, 300, 8, 8, 1000, 0, 77) * 40]


@pytest.mark.parametrize("records", [UNIFORM, MIXED], ids=["uniform", "mixed"])
@pytest.mark.parametrize("index", [0, 57, -1])
@pytest.mark.parametrize("where,what", [(8, "length"), (12, "data"), ("footer", "data")])
def test_a_damaged_byte_is_a_data_loss_error(tmp_path, records, index, where, what):
    path = _write(tmp_path / "r.tfrecord", records)
    index = index % len(records)
    start = _offsets(records)[index]
    if where == "footer":
        where = 12 + len(records[index])
    if where == 12 and not records[index]:
        pytest.skip("an empty record has no data byte")
    data = bytearray(open(path, "rb").read())
    data[start + where] ^= 0x10
    open(path, "wb").write(bytes(data))
    it = iter(TFRecordDataset(path))
    got = [next(it) for _ in range(index)]
    assert got == records[:index]  # the records before the bad one come first
    with pytest.raises(DataLossError, match=rf"offset {start} in .*the {what} checksum"):
        next(it)


def test_undamaged_files_read_whole(tmp_path):
    path = _write(tmp_path / "r.tfrecord", UNIFORM + MIXED)
    assert list(TFRecordDataset([path], buffer_size=10_000)) == UNIFORM + MIXED
