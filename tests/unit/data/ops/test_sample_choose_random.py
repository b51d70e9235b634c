"""random, counter, sample_from_datasets and choose_from_datasets, against TensorFlow 2.21.

The random numbers are our own (tf.data's are not reproduced): the tests check the
recorded deterministic behaviour exactly, and for random choices the properties that tf.data
documents (reproducible for a seed, every element once, where they stop).
"""

from __future__ import annotations

import pytest
import torch

from distribute._base.tensor_spec import TensorSpec
from distribute.data import Dataset
from distribute.errors import InvalidArgumentError

from tests.unit.data._helpers import assert_restores, values


def _a():
    return Dataset.range(3)


def _b():
    return Dataset.range(10, 15)


def _choice(*indices):
    return Dataset.from_tensor_slices(torch.tensor(indices, dtype=torch.int64))


def test_counter_matches_tf():
    assert values(Dataset.counter().take(3)) == [0, 1, 2]
    assert values(Dataset.counter(5, -2).take(3)) == [5, 3, 1]
    assert Dataset.counter().element_spec == TensorSpec((), torch.int64)
    assert Dataset.counter(dtype=torch.int32).element_spec == TensorSpec((), torch.int32)
    assert Dataset.counter().cardinality() == -1
    assert values(Dataset.counter(3).batch(2).take(2)) == [[3, 4], [5, 6]]
    assert_restores(lambda: Dataset.counter(7, 3).take(40))
    with pytest.raises(TypeError, match="start"):
        Dataset.counter(1.5)


def test_random_is_reproducible_per_seed_and_resumes():
    first = values(Dataset.random(seed=4).take(10))
    assert first == values(Dataset.random(seed=4).take(10))  # as tf's docstring shows
    assert first != values(Dataset.random(seed=5).take(10))
    ds = Dataset.random(seed=4).take(10)
    assert values(ds) == values(ds)  # same sequence each epoch by default
    again = Dataset.random(seed=4, rerandomize_each_iteration=True).take(10)
    assert values(again) != values(again)
    assert Dataset.random().element_spec == TensorSpec((), torch.int64)
    assert Dataset.random().cardinality() == -1
    assert all(0 <= v < 2 ** 62 for v in first)
    assert_restores(lambda: Dataset.random(seed=1).take(3000), positions=(0, 1, 1023, 1024, 2000))


def test_choose_from_datasets_matches_tf():
    choice = (0, 1, 1, 0, 0, 0, 0, 1)
    assert values(Dataset.choose_from_datasets([_a(), _b()], _choice(*choice))) == [0, 10, 11, 1, 2]
    assert values(Dataset.choose_from_datasets([_a(), _b()], _choice(*choice),
                                               stop_on_empty_dataset=False)) == [0, 10, 11, 1, 2, 12]
    assert Dataset.choose_from_datasets([_a(), _b()], Dataset.range(2)).cardinality() == -2
    assert_restores(lambda: Dataset.choose_from_datasets(
        [_a().shuffle(3, seed=1), _b()], _choice(*choice), stop_on_empty_dataset=False))


def test_choose_from_datasets_errors():
    with pytest.raises(ValueError, match="`datasets` should not be empty"):
        Dataset.choose_from_datasets([], Dataset.range(2))
    with pytest.raises(TypeError, match="must be scalar int64"):
        Dataset.choose_from_datasets([_a(), _b()], Dataset.range(2).map(lambda x: x.to(torch.int32)))
    with pytest.raises(TypeError, match="must be scalar int64"):
        Dataset.choose_from_datasets([_a(), _b()], Dataset.range(2).batch(1))
    with pytest.raises(TypeError, match="compatible element specs"):
        Dataset.choose_from_datasets([_a(), _a().map(lambda x: x.to(torch.int32))], Dataset.range(2))
    with pytest.raises(TypeError, match="should be a Dataset"):
        Dataset.choose_from_datasets([_a(), _b()], [0, 1])
    for bad in (5, -1):
        with pytest.raises(InvalidArgumentError, match="Selector index out of range"):
            list(Dataset.choose_from_datasets([_a(), _b()], _choice(0, bad)))


def test_sample_from_datasets_recorded_behaviour():
    both = values(Dataset.sample_from_datasets([_a(), _b()], weights=[0.5, 0.5], seed=1))
    assert sorted(both) == [0, 1, 2, 10, 11, 12, 13, 14]  # every element once
    assert [x for x in both if x < 10] == [0, 1, 2]  # each input in order
    assert values(Dataset.sample_from_datasets([_a()])) == [0, 1, 2]
    assert values(Dataset.sample_from_datasets([_a(), _b()], weights=[1.0, 0.0], seed=1)) == [0, 1, 2]
    assert values(Dataset.sample_from_datasets([_a(), _b()], weights=[-1.0, 2.0])) == [10, 11, 12, 13, 14]
    assert values(Dataset.sample_from_datasets([_a(), _b()], weights=[0.0, 0.0])) == []
    assert Dataset.sample_from_datasets([_a(), _b()]).cardinality() == -2
    assert Dataset.sample_from_datasets([_a().repeat(), _b().repeat()]).cardinality() == -1


def test_sample_from_datasets_stop_on_empty_ends_at_first_exhausted_draw():
    for seed in range(5):
        out = values(Dataset.sample_from_datasets([_a(), _b()], seed=seed, stop_on_empty_dataset=True))
        first, second = [x for x in out if x < 10], [x for x in out if x >= 10]
        assert first == [0, 1, 2][:len(first)] and second == [10, 11, 12, 13, 14][:len(second)]
        assert len(first) == 3 or len(second) == 5  # it ended on drawing an exhausted input


def test_sample_from_datasets_is_seeded_and_resumable():
    make = lambda: Dataset.sample_from_datasets(  # noqa: E731
        [Dataset.range(50), Dataset.range(100, 150), Dataset.range(200, 230)], [0.2, 0.5, 0.3], seed=9)
    assert values(make()) == values(make())
    assert values(make()) != values(Dataset.sample_from_datasets(
        [Dataset.range(50), Dataset.range(100, 150), Dataset.range(200, 230)], [0.2, 0.5, 0.3], seed=10))
    assert_restores(make, positions=(0, 1, 7, 60))
    weights = Dataset.from_tensors(torch.tensor([0.0, 1.0])).repeat()
    assert values(Dataset.sample_from_datasets([_a(), _b()], weights=weights, seed=1)) == [10, 11, 12, 13, 14]
    assert_restores(lambda: Dataset.sample_from_datasets([_a(), _b()], weights=Dataset.from_tensor_slices(
        torch.tensor([[0.5, 0.5]] * 6)), seed=2))


def test_sample_from_datasets_errors():
    with pytest.raises(ValueError, match="`datasets` should not be empty"):
        Dataset.sample_from_datasets([])
    for weights in ([1.0], [1.0, 2.0, 3.0]):
        with pytest.raises(ValueError, match="`weights` should have the same length as `datasets`"):
            Dataset.sample_from_datasets([_a(), _b()], weights=weights)
    with pytest.raises(TypeError, match="compatible element specs"):
        Dataset.sample_from_datasets([_a(), _a().map(lambda x: x.to(torch.int32))])
    with pytest.raises(TypeError, match="datasets"):
        Dataset.sample_from_datasets([_a(), 3])
    with pytest.raises(TypeError, match="datasets"):
        Dataset.sample_from_datasets(_a())
    with pytest.raises(TypeError, match="float vector"):
        Dataset.sample_from_datasets([_a(), _b()], weights=Dataset.from_tensors(torch.tensor([0, 1])).repeat())
