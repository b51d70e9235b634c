"""One iterator shared by 8 threads: every element exactly once, no internal error (tf.data's
iterators are safe to share between threads)."""

from __future__ import annotations

import threading
from typing import Any, Callable, List

import pytest
import torch

from distribute.data import Dataset, Iterator

from tests.unit.data._helpers import plain

N = 126
THREADS = 8


def _generator():
    yield from range(N)


PIPELINES = {
    "range": lambda: Dataset.range(N),
    "from_tensor_slices": lambda: Dataset.from_tensor_slices(torch.arange(N)),
    "range_take_skip": lambda: Dataset.range(N + 10).skip(5).take(N).map(lambda x: x - 5),
    "map": lambda: Dataset.range(N).map(lambda x: x + 0),
    "map_parallel": lambda: Dataset.range(N).map(lambda x: x + 0, num_parallel_calls=2),
    "filter": lambda: Dataset.range(2 * N).filter(lambda x: x % 2 == 0).map(lambda x: x // 2),
    "shuffle": lambda: Dataset.range(N).shuffle(20, seed=1),
    "unbatch": lambda: Dataset.range(N).batch(7).unbatch(),
    "generator": lambda: Dataset.from_generator(_generator, output_types=torch.int64),
    "prefetch": lambda: Dataset.range(N).map(lambda x: x + 0).prefetch(3),
    "interleave": lambda: Dataset.range(2).interleave(
        lambda i: Dataset.range(i * 63, i * 63 + 63), cycle_length=2),
    "cache": lambda: Dataset.range(N).map(lambda x: x + 0).cache(),
}


def _drain_from_threads(it: Iterator, pull: Callable[[Iterator], Any]) -> tuple:
    results: List[List[Any]] = [[] for _ in range(THREADS)]
    errors: List[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(slot: int) -> None:
        start.wait()
        try:
            while True:
                value = pull(it)
                if value is None:
                    return
                results[slot].append(plain(value))
        except BaseException as exc:  # noqa: BLE001  reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [v for r in results for v in r], errors


def _next_or_none(it: Iterator) -> Any:
    try:
        return next(it)
    except StopIteration:
        return None


def _optional_or_none(it: Iterator) -> Any:
    optional = it.get_next_as_optional()
    return optional.get_value() if optional.has_value() else None


@pytest.mark.parametrize("pull", [_next_or_none, _optional_or_none], ids=["next", "optional"])
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_shared_iterator_gives_each_element_once(name, pull):
    for _ in range(3):  # races show up only sometimes
        with Iterator(PIPELINES[name]()) as it:
            got, errors = _drain_from_threads(it, pull)
        assert not errors, f"{name}: {errors[:3]}"
        assert sorted(got) == list(range(N)), f"{name}: {len(got)} elements"


def test_state_saved_while_threads_iterate_restores_exactly():
    ds = Dataset.range(1000).map(lambda x: x * 2)
    with Iterator(ds) as it:
        stop = threading.Event()
        taken: List[int] = []

        def consume() -> None:
            while not stop.is_set() and len(taken) < 300:
                taken.append(int(next(it)))

        workers = [threading.Thread(target=consume) for _ in range(4)]
        for t in workers:
            t.start()
        state = it.state_dict()
        stop.set()
        for t in workers:
            t.join()
    restored = iter(ds)
    restored.load_state_dict(state)
    rest = [int(x) for x in restored]
    assert rest == list(range(2 * (1000 - len(rest)), 2000, 2))
