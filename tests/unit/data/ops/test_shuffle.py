import pytest
import torch

from distribute.data import UNKNOWN_CARDINALITY, Dataset
from distribute.data.ops.shuffle import RandomStream
from distribute.errors import InvalidArgumentError

from .._helpers import assert_restores, values


def test_shuffle_is_a_permutation_and_seeded():
    a = values(Dataset.range(50).shuffle(50, seed=7))
    assert sorted(a) == list(range(50)) and a != list(range(50))
    assert values(Dataset.range(50).shuffle(50, seed=7)) == a
    assert values(Dataset.range(50).shuffle(50, seed=8)) != a
    assert Dataset.range(50).shuffle(10).cardinality() == 50


@pytest.mark.parametrize("buffer_size", [1, 7, 39, 40, 41, 1000])
def test_bulk_and_element_paths_give_the_same_order(buffer_size):
    bulk = values(Dataset.range(40).shuffle(buffer_size, seed=3))
    sequential = values(Dataset.range(40).filter(lambda x: True).shuffle(buffer_size, seed=3))
    assert bulk == sequential
    batched = values(Dataset.range(40).shuffle(buffer_size, seed=3).batch(6))
    assert sum(batched, []) == bulk
    infinite = values(Dataset.range(40).repeat().shuffle(buffer_size, seed=3).batch(7), 20)
    infinite_seq = values(Dataset.range(40).repeat().filter(lambda x: True).shuffle(buffer_size, seed=3), 140)
    assert sum(infinite, []) == infinite_seq


def test_small_buffer_keeps_elements_near_their_place():
    out = values(Dataset.range(100).shuffle(3, seed=0))
    assert sorted(out) == list(range(100))
    assert all(out[j] <= j + 2 for j in range(100))  # output j is one of inputs 0..j + buffer_size - 1
    assert values(Dataset.range(10).shuffle(1, seed=0)) == list(range(10))


def test_reshuffle_each_iteration():
    ds = Dataset.range(20).shuffle(20, seed=1)
    first, second = values(ds), values(ds)
    assert sorted(first) == sorted(second) and first != second
    fixed = Dataset.range(20).shuffle(20, seed=1, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)
    unseeded = Dataset.range(20).shuffle(20, reshuffle_each_iteration=False)
    assert values(unseeded) == values(unseeded)


def test_whole_dataset_buffer_and_bad_sizes():
    assert sorted(values(Dataset.range(30).shuffle(UNKNOWN_CARDINALITY, seed=1))) == list(range(30))
    for size in (0, -3):
        with pytest.raises(InvalidArgumentError, match=f"buffer_size={size}"):
            Dataset.range(3).shuffle(size)


def test_shuffle_of_tensor_slices_then_batch():
    x = torch.arange(20).reshape(10, 2)
    out = values(Dataset.from_tensor_slices((x, torch.arange(10))).shuffle(10, seed=5).batch(4))
    rows = [r for xb, _ in out for r in xb]
    labels = [v for _, yb in out for v in yb]
    assert sorted(labels) == list(range(10)) and rows == [[2 * v, 2 * v + 1] for v in labels]


def test_random_stream_state():
    a = RandomStream(11)
    drawn = [a.below(1000) for _ in range(1500)]
    b = RandomStream(11, 700)
    assert [b.below(1000) for _ in range(800)] == drawn[700:]


def test_shuffle_restores_on_every_path():
    assert_restores(lambda: Dataset.range(30).shuffle(8, seed=2))
    assert_restores(lambda: Dataset.range(30).shuffle(8, seed=2).batch(4), positions=(0, 1, 3))
    assert_restores(lambda: Dataset.range(30).filter(lambda x: True).shuffle(8, seed=2))
    assert_restores(lambda: Dataset.range(30).map(lambda x: (x, x * 2)).shuffle(8, seed=2).batch(4), positions=(0, 2))
    assert_restores(lambda: Dataset.range(10).repeat().shuffle(15, seed=9), positions=(0, 7, 20))


def test_unseeded_shuffle_restores_exactly():
    ds = Dataset.range(30).shuffle(30)
    it = iter(ds)
    values(it, 5)
    state = it.state_dict()
    rest = values(it)
    fresh = iter(Dataset.range(30).shuffle(30))
    fresh.load_state_dict(state)
    assert values(fresh) == rest


def test_iterator_seed_fixes_unseeded_shuffles():
    ds = Dataset.range(30).shuffle(30).map(lambda x: x + 0)
    from distribute.data import Iterator

    assert values(Iterator(ds, seed=5)) == values(Iterator(Dataset.range(30).shuffle(30).map(lambda x: x + 0), seed=5))
    assert values(Iterator(ds, seed=5)) != values(Iterator(ds, seed=6))
    with pytest.raises(TypeError, match="seed"):
        Iterator(ds, seed="x")
