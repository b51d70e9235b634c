import gzip
import os

import pytest
import torch

from distribute.data import Dataset, TFRecordDataset, TFRecordWriter
from distribute._base.tensor_spec import TensorSpec, string
from distribute.errors import DataLossError, FailedPreconditionError, InvalidArgumentError, NotFoundError

from .._helpers import assert_restores, values

RECORDS = [b"", b"abc", bytes(range(10))]
# Written by tf.io.TFRecordWriter (TensorFlow 2.21) for RECORDS.
TF_FILES = {
    "": "000000000000000029039807d8ea82a20300000000000000b099490e6162636e57f1210a00000000000000aea3bf3a"
        "0001020304050607080930efe4e4",
    "ZLIB": "789c636080004de619ec375e352d6286f237ccf4e44b4c4ace0bffa8c805155ab778bf15032313330b2b1b3b07a7c1"
            "fb274f0076de0dba",
    "GZIP": "1f8b0800000000000003636080004de619ec375e352d6286f237ccf4e44b4c4ace0bffa8c805155ab778bf150323"
            "13330b2b1b3b07a7c1fb274f00e34feaf33d000000",
}


def _write(path, records, compression=None):
    with TFRecordWriter(str(path), compression) as writer:
        for record in records:
            writer.write(record)
    return str(path)


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_reads_files_written_by_tensorflow(tmp_path, compression):
    path = tmp_path / "tf.tfrecord"
    path.write_bytes(bytes.fromhex(TF_FILES[compression]))
    assert values(TFRecordDataset(str(path), compression_type=compression)) == RECORDS


def test_writes_what_tensorflow_writes(tmp_path):
    path = _write(tmp_path / "ours.tfrecord", RECORDS)
    assert open(path, "rb").read().hex() == TF_FILES[""]


@pytest.mark.parametrize("compression", [None, "ZLIB", "GZIP"])
def test_write_then_read(tmp_path, compression):
    records = [os.urandom(n) for n in (0, 1, 7, 300, 5000, 70000)] + [b"x" * 3] * 100
    path = _write(tmp_path / "data.tfrecord", records, compression)
    assert values(TFRecordDataset(path, compression_type=compression, buffer_size=4096)) == records
    ds = TFRecordDataset([path, path], compression_type=compression)
    assert ds.element_spec == TensorSpec((), string) and ds.cardinality() == -2
    assert len(values(ds)) == 2 * len(records)


def test_corrupt_byte_names_file_and_offset(tmp_path):
    path = _write(tmp_path / "c.tfrecord", RECORDS)
    data = bytearray(open(path, "rb").read())
    data[20] ^= 1  # inside the length of the second record (offset 16)
    open(path, "wb").write(bytes(data))
    it = iter(TFRecordDataset(path))
    assert next(it) == b""
    with pytest.raises(DataLossError, match=rf"offset 16 in {path}.*length"):
        next(it)
    data[20] ^= 1
    data[32] ^= 0x40  # inside the data of the second record
    open(path, "wb").write(bytes(data))
    with pytest.raises(DataLossError, match=rf"offset 16 in {path}.*data checksum"):
        list(TFRecordDataset(path))


def test_corrupt_length_of_a_long_record_is_caught_before_reading_on(tmp_path):
    path = _write(tmp_path / "c.tfrecord", [b"a" * 100, b"b" * 100])
    data = bytearray(open(path, "rb").read())
    data[116 + 6] = 0x7F  # a huge length in the second header
    open(path, "wb").write(bytes(data))
    with pytest.raises(DataLossError, match="offset 116.*length"):
        list(TFRecordDataset(path, buffer_size=64))


def test_truncated_files(tmp_path):
    path = _write(tmp_path / "t.tfrecord", RECORDS)
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-5])
    it = iter(TFRecordDataset(path))
    assert values(it, 2) == RECORDS[:2]
    with pytest.raises(DataLossError, match=r"Truncated record at offset 35.*announces 10 data bytes"):
        next(it)
    open(path, "wb").write(data[:6])
    with pytest.raises(DataLossError, match="only 6 of the 12 header bytes"):
        list(TFRecordDataset(path))
    gz = tmp_path / "t.gz"
    gz.write_bytes(gzip.compress(data)[:-12])
    with pytest.raises(DataLossError, match="GZIP"):
        list(TFRecordDataset(str(gz), "GZIP"))


def test_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(NotFoundError, match="missing.tfrecord"):
        list(TFRecordDataset(str(tmp_path / "missing.tfrecord")))
    with pytest.raises(InvalidArgumentError, match="is a directory"):
        list(TFRecordDataset(str(tmp_path)))
    with pytest.raises(InvalidArgumentError, match="compression_type"):
        TFRecordDataset("x", compression_type="ZIP")
    with pytest.raises(TypeError, match="file names"):
        TFRecordDataset(3)
    with pytest.raises(TypeError, match="scalar strings"):
        TFRecordDataset(Dataset.range(3))
    with pytest.raises(ValueError, match="at least one"):
        TFRecordDataset([])
    writer = TFRecordWriter(str(tmp_path / "w"))
    with pytest.raises(TypeError, match="bytes"):
        writer.write(3)
    writer.close()
    with pytest.raises(FailedPreconditionError, match="closed"):
        writer.write(b"x")
    with pytest.raises(NotFoundError, match="does not exist"):
        TFRecordWriter(str(tmp_path / "no" / "w"))


def test_parallel_reads_interleave_files(tmp_path):
    a = _write(tmp_path / "a", [b"a0", b"a1", b"a2"])
    b = _write(tmp_path / "b", [b"b0"])
    ds = TFRecordDataset([a, b], num_parallel_reads=2)
    assert values(ds) == [b"a0", b"b0", b"a1", b"a2"]
    assert ds._inputs()[0].cardinality() == 2


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_tfrecord_restores(tmp_path, compression):
    files = [_write(tmp_path / f"f{i}", [b"%d-%d" % (i, j) for j in range(5)], compression) for i in range(3)]
    assert_restores(lambda: TFRecordDataset(files, compression), positions=(0, 1, 5, 7, 14, 15))
    assert_restores(lambda: TFRecordDataset(files, compression, num_parallel_reads=2).batch(2), positions=(0, 3))


def test_read_and_parse_pipeline(tmp_path):
    vectors = torch.arange(40, dtype=torch.float32).reshape(10, 4)
    path = _write(tmp_path / "v", [v.numpy().tobytes() for v in vectors])
    ds = TFRecordDataset(path).map(lambda r: torch.frombuffer(bytearray(r), dtype=torch.float32)).batch(4)
    batches = list(ds)
    assert torch.equal(torch.cat(batches), vectors)


def test_reader_is_a_graph_node_over_file_names(tmp_path):
    files = [_write(tmp_path / f"f{i}", [b"%d" % i]) for i in range(4)]
    ds = TFRecordDataset(files)
    assert ds._is_file_reader and ds.filenames is ds._inputs()[0]
    sharded = ds._with_inputs((ds.filenames.shard(2, 1),))
    assert values(sharded) == [b"1", b"3"]
