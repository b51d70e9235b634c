"""The vmap path of map/filter: used only when it matches the per-element result."""

import torch

from distribute.data import Dataset
from distribute.data.ops._vectorize import Vectorizer

from .._helpers import values


def test_vectorizer_runs_pure_functions_batched():
    vec = Vectorizer(lambda x: x * 2 + 1)
    out, _ = vec(torch.arange(5))
    assert out.tolist() == [1, 3, 5, 7, 9] and vec.usable


def test_vectorizer_falls_back_for_what_vmap_cannot_do():
    for fn in (lambda x: x * 2 if x > 2 else x, lambda x: x.item(), lambda x: x + torch.rand(()),
               lambda x: 3, lambda x: torch.nonzero(x)):
        vec = Vectorizer(fn)
        out, rows = vec(torch.arange(4))
        assert out is None and not vec.usable
        assert rows.tolist() == [0, 1, 2, 3]


def test_vectorizer_checks_against_per_element_calls():
    calls = []

    def stateful(x):
        calls.append(1)
        return x + len(calls)

    vec = Vectorizer(stateful)
    out, rows = vec(torch.arange(4))
    assert out is None and rows.tolist() == [0, 1, 2, 3]


def test_in_place_functions_see_pristine_rows_on_fallback():
    source = torch.arange(6)

    def bump(x):
        x.add_(100)
        return x if int(x.sum()) >= 0 else x

    ds = Dataset.from_tensor_slices(source).map(bump).batch(3)
    assert values(ds) == [[100, 101, 102], [103, 104, 105]]


def test_data_dependent_functions_still_work_in_a_batch_pipeline():
    ds = Dataset.range(6).map(lambda x: x * 10 if int(x) % 2 else -x).batch(4)
    assert values(ds) == [[0, 10, -2, 30], [-4, 50]]


def test_vectorized_filter_and_map_chain():
    ds = Dataset.range(20).filter(lambda x: x % 3 == 0).map(lambda x: x * 2).batch(3)
    assert values(ds) == [[0, 6, 12], [18, 24, 30], [36]]
