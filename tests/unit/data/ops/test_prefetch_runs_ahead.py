"""prefetch(n) after Python code or I/O produces up to n elements on a background thread, as
in tf.data (its map test: the map function sets an event, the consumer waits for it)."""

from __future__ import annotations

import gc
import threading

import pytest
import torch

from distribute.data import AUTOTUNE, Dataset, Iterator
from distribute.data.ops.prefetch import PrefetchDataset

from tests.unit.data._helpers import assert_restores, plain, roundtrip

TRIGGER = 5


def _prefetch_threads() -> list:
    return [t for t in threading.enumerate() if t.name == "distribute.data.prefetch"]


@pytest.mark.parametrize("buffer_size", range(1, TRIGGER))
def test_map_runs_ahead_by_buffer_size(buffer_size):
    event = threading.Event()

    def fn(x):
        if int(x) == TRIGGER:
            event.set()
        return x * x

    ds = Dataset.range(100).map(fn).prefetch(buffer_size)
    consumed_before_event = TRIGGER - buffer_size + 1
    with Iterator(ds) as it:
        for i in range(consumed_before_event):
            assert not event.is_set(), f"ran more than {buffer_size} ahead"
            assert int(next(it)) == i * i
        assert event.wait(timeout=10), "the map function did not run ahead of the consumer"
        assert [int(x) for x in it] == [i * i for i in range(consumed_before_event, 100)]


def test_generator_runs_ahead():
    event = threading.Event()

    def generator():
        yield 0
        event.set()
        yield 1

    ds = Dataset.from_generator(generator, output_types=torch.int64).prefetch(1)
    with Iterator(ds) as it:
        assert int(next(it)) == 0
        assert event.wait(timeout=10)
        assert [int(x) for x in it] == [1]


def test_file_reader_runs_ahead(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("a\nb\nc\n")
    from distribute.data import TextLineDataset

    with Iterator(TextLineDataset(str(path)).prefetch(2)) as it:
        assert next(it) == b"a"
        assert _prefetch_threads()
        assert list(it) == [b"b", b"c"]


def test_in_memory_upstream_stays_inline():
    with Iterator(Dataset.range(10).batch(2).prefetch(2)) as it:
        assert plain(next(it)) == [0, 1]
        assert not _prefetch_threads()


def test_state_is_exact_while_the_thread_runs():
    def make():
        return Dataset.range(40).map(lambda x: x + 100).prefetch(3)

    assert_restores(make, positions=(0, 1, 2, 5, 17, 39, 40))
    with Iterator(make()) as it:
        head = [int(next(it)) for _ in range(7)]
        state = roundtrip(it.state_dict())
        rest = [int(x) for x in it]
    restored = Iterator(make())
    restored.load_state_dict(state)
    with restored:
        assert head + [int(x) for x in restored] == head + rest == list(range(100, 140))


def test_thread_stops_on_close_and_on_garbage_collection():
    it = Iterator(Dataset.range(1000).map(lambda x: x).prefetch(2))
    next(it)
    assert _prefetch_threads()
    it.close()
    assert not _prefetch_threads()
    it = Iterator(Dataset.range(1000).map(lambda x: x).prefetch(2))
    next(it)
    del it
    gc.collect()
    for t in _prefetch_threads():
        t.join(timeout=5)
    assert not _prefetch_threads()


def test_errors_reach_the_consumer_at_their_element():
    def fn(x):
        if int(x) == 2:
            raise KeyError("two")
        return x

    with Iterator(Dataset.range(4).map(fn).prefetch(2)) as it:
        assert [int(next(it)), int(next(it))] == [0, 1]
        with pytest.raises(KeyError):
            next(it)
        assert int(next(it)) == 3


def test_buffer_size_none_is_autotune():
    ds = Dataset.range(5).prefetch(buffer_size=None)
    assert isinstance(ds, PrefetchDataset) and ds.buffer_size == AUTOTUNE
    assert [int(x) for x in ds] == list(range(5))
    assert Dataset.range(3).prefetch().buffer_size == AUTOTUNE


def test_buffer_size_zero_does_not_run_ahead():
    calls = []
    ds = Dataset.range(5).map(lambda x: (calls.append(int(x)), x)[1]).prefetch(0)
    calls.clear()  # the placeholder calls made when the dataset was built
    with Iterator(ds) as it:
        next(it)
        assert calls == [0] and not _prefetch_threads()
