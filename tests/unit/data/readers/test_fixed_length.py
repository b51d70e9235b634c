"""FixedLengthRecordDataset against outputs and errors recorded from TensorFlow 2.21."""

from __future__ import annotations

import gzip
import zlib

import pytest

from distribute._base.tensor_spec import TensorSpec, string
from distribute.data import Dataset, FixedLengthRecordDataset
from distribute.errors import DataLossError, InvalidArgumentError, NotFoundError

from tests.unit.data._helpers import assert_restores, values

BODY = b"abcdefghijkl"
RECORDS = [b"abcd", b"efgh", b"ijkl"]


@pytest.fixture
def files(tmp_path):
    content = b"HH" + BODY + b"FFF"
    paths = {
        "a": content, "b": b"HH" + BODY + b"m" + b"FFF", "short": b"H", "empty": b"",
        "a.gz": gzip.compress(content), "b.gz": gzip.compress(b"HH" + BODY + b"m" + b"FFF"),
        "a.z": zlib.compress(content),
    }
    for name, data in paths.items():
        (tmp_path / name).write_bytes(data)
    return {name: str(tmp_path / name) for name in paths}


def test_records_between_header_and_footer(files):
    assert values(FixedLengthRecordDataset(files["a"], 4, header_bytes=2, footer_bytes=3)) == RECORDS
    assert values(FixedLengthRecordDataset(files["a"], 4, 2, 3, buffer_size=1)) == RECORDS
    assert values(FixedLengthRecordDataset(files["empty"], 4)) == []
    ds = FixedLengthRecordDataset(files["a"], 4)
    assert ds.element_spec == TensorSpec((), string) and ds.cardinality() == -2


def test_several_files_in_order_and_interleaved(files):
    names = [files["a"], files["a"]]
    assert values(FixedLengthRecordDataset(names, 4, 2, 3)) == RECORDS * 2
    assert values(FixedLengthRecordDataset(names, 4, 2, 3, num_parallel_reads=2)) == [
        b"abcd", b"abcd", b"efgh", b"efgh", b"ijkl", b"ijkl"]
    assert values(FixedLengthRecordDataset(Dataset.from_tensor_slices(names), 4, 2, 3)) == RECORDS * 2


@pytest.mark.parametrize("name, kind", [("a.gz", "GZIP"), ("a.z", "ZLIB")])
def test_compressed(files, name, kind):
    assert values(FixedLengthRecordDataset(files[name], 4, 2, 3, compression_type=kind)) == RECORDS
    assert values(FixedLengthRecordDataset(files[name], 4, 2, 3, buffer_size=4, compression_type=kind)) == RECORDS


def test_body_not_a_multiple_of_the_record(files):
    message = (r'Excluding the header \(2 bytes\) and footer \(3 bytes\), input file ".*b" has body '
               r"length 13 bytes, which is not an exact multiple of the record length \(4 bytes\).")
    with pytest.raises(InvalidArgumentError, match=message):
        list(FixedLengthRecordDataset(files["b"], 4, 2, 3))
    with pytest.raises(DataLossError, match=message.replace(".*b", ".*b.gz")):
        list(FixedLengthRecordDataset(files["b.gz"], 4, 2, 3, compression_type="GZIP"))
    with pytest.raises(InvalidArgumentError, match=r"body length 17 bytes.*\(5 bytes\)"):
        list(FixedLengthRecordDataset(files["a"], 5))
    with pytest.raises(DataLossError, match="shorter than its header"):
        list(FixedLengthRecordDataset(files["short"], 4, 2, 3))


def test_argument_errors(files, tmp_path):
    with pytest.raises(InvalidArgumentError, match="`record_bytes` must be > 0"):
        FixedLengthRecordDataset(files["a"], 0)
    with pytest.raises(InvalidArgumentError, match="`record_bytes` must be > 0"):
        FixedLengthRecordDataset(files["a"], -1)
    with pytest.raises(InvalidArgumentError, match="`header_bytes` must be >= 0"):
        FixedLengthRecordDataset(files["a"], 4, header_bytes=-1)
    with pytest.raises(InvalidArgumentError, match="compression_type"):
        FixedLengthRecordDataset(files["a"], 4, compression_type="BZ")
    with pytest.raises(TypeError, match="record_bytes"):
        FixedLengthRecordDataset(files["a"], 4.0)
    with pytest.raises(NotFoundError, match="No such file"):
        list(FixedLengthRecordDataset(str(tmp_path / "missing"), 4))


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_restores_mid_file(tmp_path, compression):
    body = bytes(range(256)) * 3
    content = b"HEAD" + body + b"FT"
    path = tmp_path / "data.bin"
    path.write_bytes(gzip.compress(content) if compression else content)
    make = lambda: FixedLengthRecordDataset([str(path)] * 2, 8, 4, 2, buffer_size=40,  # noqa: E731
                                            compression_type=compression)
    assert len(values(make())) == 2 * len(body) // 8
    assert_restores(make, positions=(0, 1, 5, 96, 100), limit=300)
