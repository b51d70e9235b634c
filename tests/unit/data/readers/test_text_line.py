import gzip
import zlib

import pytest

from distribute.data import Dataset, TextLineDataset
from distribute.errors import NotFoundError

from .._helpers import assert_restores, values


def test_lines_match_tf(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(b"a\r\nbb\n\nccc\r\nlast")
    assert values(TextLineDataset(str(path))) == [b"a", b"bb", b"", b"ccc", b"last"]
    assert values(TextLineDataset(str(path), buffer_size=2)) == [b"a", b"bb", b"", b"ccc", b"last"]


@pytest.mark.parametrize("compression, compress", [("GZIP", gzip.compress), ("ZLIB", zlib.compress)])
def test_compressed_lines(tmp_path, compression, compress):
    path = tmp_path / "lines.z"
    path.write_bytes(compress(b"x\ny\n"))
    assert values(TextLineDataset(str(path), compression_type=compression)) == [b"x", b"y"]


def test_text_pipeline_and_restore(tmp_path):
    files = []
    for i in range(3):
        p = tmp_path / f"f{i}.txt"
        p.write_text("".join(f"{i},{j}\n" for j in range(4)))
        files.append(str(p))
    ds = TextLineDataset(files).map(lambda line: int(line.split(b",")[1]))
    assert values(ds) == [0, 1, 2, 3] * 3
    assert_restores(lambda: TextLineDataset(files), positions=(0, 1, 4, 6, 11))
    assert_restores(lambda: Dataset.from_tensor_slices(files).interleave(TextLineDataset, cycle_length=2),
                    positions=(0, 3, 7))


def test_missing_file(tmp_path):
    with pytest.raises(NotFoundError, match="nope.txt"):
        list(TextLineDataset(str(tmp_path / "nope.txt")))
