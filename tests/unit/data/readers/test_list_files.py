import pytest

from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def _files(tmp_path, n=5):
    for i in range(n):
        (tmp_path / f"part-{i}.txt").write_text(str(i))
    (tmp_path / "other.csv").write_text("x")
    return str(tmp_path / "part-*.txt")


def test_list_files_sorted_and_shuffled(tmp_path):
    pattern = _files(tmp_path)
    names = [str(tmp_path / f"part-{i}.txt").encode() for i in range(5)]
    assert values(Dataset.list_files(pattern, shuffle=False)) == names
    shuffled = values(Dataset.list_files(pattern, seed=3))
    assert sorted(shuffled) == names
    assert values(Dataset.list_files([pattern, str(tmp_path / "*.csv")], shuffle=False))[-1].endswith(b"part-4.txt")


def test_list_files_is_a_shardable_graph(tmp_path):
    ds = Dataset.list_files(_files(tmp_path), seed=1)
    assert [n._op for n in ds._walk()] == ["shuffle", "from_tensor_slices"]
    assert_restores(lambda: Dataset.list_files(_files(tmp_path), seed=1).repeat(2), positions=(0, 3, 6))


def test_no_match_is_an_error(tmp_path):
    with pytest.raises(InvalidArgumentError, match="No files matched pattern"):
        Dataset.list_files(str(tmp_path / "*.none"))
    with pytest.raises(TypeError, match="pattern"):
        Dataset.list_files(3)
