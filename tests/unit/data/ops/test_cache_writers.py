"""cache: one writer per file prefix, and a memory cache complete once it holds the input's
known cardinality (tf.data's cache tests)."""

from __future__ import annotations

import os

import pytest

from distribute.data import Dataset, Iterator
from distribute.errors import AlreadyExistsError


def test_second_file_writer_on_the_same_prefix(tmp_path):
    prefix = str(tmp_path / "cache")
    ds = Dataset.range(10)
    first, second = Iterator(ds.cache(prefix)), Iterator(ds.cache(prefix))
    with first, second:
        assert int(next(first)) == 0
        assert os.path.exists(prefix + ".lockfile")
        with pytest.raises(AlreadyExistsError, match="lock file"):
            next(second)
        assert [int(x) for x in first] == list(range(1, 10))
    assert not os.path.exists(prefix + ".lockfile")
    assert [int(x) for x in ds.cache(prefix)] == list(range(10))  # the first writer's cache


def test_abandoned_writer_releases_the_lock(tmp_path):
    prefix = str(tmp_path / "cache")
    with Iterator(Dataset.range(10).cache(prefix)) as it:
        next(it)
    assert not os.path.exists(prefix + ".lockfile")
    assert [int(x) for x in Dataset.range(3).cache(prefix)] == [0, 1, 2]


def test_stale_lock_file_is_reported(tmp_path):
    prefix = str(tmp_path / "cache")
    open(prefix + ".lockfile", "w").close()
    with pytest.raises(AlreadyExistsError, match="delete the lock file"):
        list(Dataset.range(3).cache(prefix))


def test_readers_need_no_lock(tmp_path):
    prefix = str(tmp_path / "cache")
    list(Dataset.range(4).cache(prefix))
    ds = Dataset.range(4).cache(prefix)
    with Iterator(ds) as a, Iterator(ds) as b:
        assert [int(next(a)), int(next(b)), int(next(a))] == [0, 0, 1]


def test_memory_cache_kept_when_known_cardinality_is_read():
    ds = Dataset.range(10).shuffle(10, reshuffle_each_iteration=True).cache()
    it = iter(ds)
    first = [int(next(it)) for _ in range(10)]  # the end is never asked for
    for _ in range(3):
        assert [int(x) for x in ds] == first
    assert sorted(first) == list(range(10))


def test_memory_cache_of_unknown_cardinality_waits_for_the_end():
    calls = []
    ds = Dataset.range(4).filter(lambda x: (calls.append(1), True)[1]).cache()
    it = iter(ds)
    [next(it) for _ in range(4)]
    del it
    calls.clear()
    assert [int(x) for x in ds] == [0, 1, 2, 3]
    assert len(calls) == 4  # not cached: the input ran again
