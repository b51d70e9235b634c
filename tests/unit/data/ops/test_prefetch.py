import threading
import time

import pytest
import torch

from distribute.data import AUTOTUNE, Dataset
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def _threads():
    return [t for t in threading.enumerate() if t.name == "distribute.data.prefetch"]


def test_prefetch_inline_keeps_order_and_rows():
    assert values(Dataset.range(10).prefetch(2)) == list(range(10))
    assert values(Dataset.range(10).prefetch(AUTOTUNE).batch(4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert values(Dataset.range(3).prefetch(0)) == [0, 1, 2]


def test_prefetch_bad_buffer_size():
    with pytest.raises(InvalidArgumentError, match="buffer_size=-2"):
        Dataset.range(3).prefetch(-2)


def test_prefetch_thread_mode(force_threads):
    it = iter(Dataset.range(20).map(lambda x: x * 2).prefetch(3))
    assert values(it, 4) == [0, 2, 4, 6]
    assert _threads(), "the producer thread should have started"
    assert values(it) == [2 * i for i in range(4, 20)]
    it.close()
    assert not _threads()


def test_prefetch_thread_stops_on_garbage_collection(force_threads):
    it = iter(Dataset.range(1000).prefetch(2))
    values(it, 3)
    assert _threads()
    del it
    deadline = time.monotonic() + 2
    while _threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _threads()


def test_prefetched_elements_are_in_the_state(force_threads):
    make = lambda: Dataset.range(30).map(lambda x: x + 1).prefetch(4)
    it = iter(make())
    assert values(it, 3) == [1, 2, 3]
    time.sleep(0.05)  # let the producer fill its buffer
    state = it.state_dict()
    assert len(state["pipeline"]["buffer"]) > 0
    fresh = iter(make())
    fresh.load_state_dict(state)
    assert values(fresh) == list(range(4, 31))
    it.close()


def test_prefetch_exception_reaches_consumer_at_its_element(force_threads):
    def boom(x):
        if int(x) == 4:
            raise RuntimeError("bad element 4")
        return x

    it = iter(Dataset.range(8).map(boom).prefetch(2))
    assert values(it, 4) == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="bad element 4") as info:
        next(it)
    assert any(entry.name == "boom" for entry in info.traceback)
    assert values(it) == [5, 6, 7]


def test_prefetch_restores_inline_and_threaded(force_threads):
    assert_restores(lambda: Dataset.range(25).shuffle(5, seed=1).prefetch(3))
    assert_restores(lambda: Dataset.range(25).batch(4).prefetch(AUTOTUNE), positions=(0, 2, 5))


def test_prefetch_starts_a_thread_only_when_it_pays():
    it = iter(Dataset.range(200).prefetch(2))
    values(it, 50)
    assert not _threads()
    it.close()


def test_nested_prefetch_threads_close(force_threads):
    ds = Dataset.range(100).prefetch(2).map(lambda x: torch.stack([x, x])).prefetch(2)
    it = iter(ds)
    assert values(it, 3) == [[0, 0], [1, 1], [2, 2]]
    it.close()
    assert not _threads()
