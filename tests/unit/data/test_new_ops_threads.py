"""The iterators of issue 18's nodes shared between threads: each element goes to one caller."""

from __future__ import annotations

import threading

import pytest

from distribute.data import Dataset


def _drain_in_threads(dataset: Dataset, threads: int = 4) -> list:
    iterator = iter(dataset)
    results: list = [[] for _ in range(threads)]

    def work(out: list) -> None:
        for element in iterator:
            out.append(int(element))

    workers = [threading.Thread(target=work, args=(results[i],)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sorted(x for r in results for x in r)


@pytest.mark.parametrize("make, expected", [
    (lambda: Dataset.range(400).window(4).flat_map(lambda w: w), list(range(400))),
    (lambda: Dataset.range(400).batch(7).rebatch(3).unbatch(), list(range(400))),
    (lambda: Dataset.sample_from_datasets([Dataset.range(200), Dataset.range(200, 400)], seed=3), list(range(400))),
    (lambda: Dataset.range(400).group_by_window(lambda x: x % 5, lambda k, w: w, window_size=3), list(range(400))),
    (lambda: Dataset.range(400).scan(0, lambda s, x: (s, x)), list(range(400))),
])
def test_shared_iterator_hands_out_each_element_once(make, expected):
    assert _drain_in_threads(make()) == expected
