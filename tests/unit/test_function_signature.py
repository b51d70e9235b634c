"""``distribute.function``: distributed specs in ``input_signature`` (issue 24) and the end of an
iterator inside a function (issue 21.10)."""

import pytest
import torch

import distribute
from distribute.data import Dataset
from distribute.distributed_input import PerReplicaSpec
from distribute.errors import OutOfRangeError
from tests.strategies import named_strategies

SPEC = distribute.TensorSpec((None, 2), torch.float32)


def test_per_replica_spec_is_accepted_at_definition():
    f = distribute.function(lambda x, y: x, input_signature=[{"a": PerReplicaSpec(SPEC, SPEC)}, SPEC])
    assert isinstance(f.input_signature[0]["a"], PerReplicaSpec)
    with pytest.raises(TypeError, match="invalid args \\[3\\].*PerReplicaSpec leaves"):
        distribute.function(lambda x: x, input_signature=[PerReplicaSpec(SPEC), 3])


def test_per_replica_value_passes_through_unchanged():
    value = distribute.PerReplica([torch.ones(1, 2), torch.zeros(0, 2)])
    f = distribute.function(lambda d: d, input_signature=[{"a": PerReplicaSpec(SPEC, SPEC)}])
    assert f({"a": value})["a"] is value


def test_plain_spec_given_a_per_replica_says_what_to_use():
    f = distribute.function(lambda x: x, input_signature=[SPEC])
    with pytest.raises(TypeError, match="argument `x` is a PerReplica but its spec is the plain TensorSpec.*"
                                        "element_spec"):
        f(distribute.PerReplica([torch.ones(1, 2), torch.ones(1, 2)]))


def test_error_names_keyword_and_nested_argument():
    f = distribute.function(lambda x, y: y, input_signature=[SPEC, {"k": PerReplicaSpec(SPEC, SPEC)}])
    bad = distribute.PerReplica([torch.ones(1, 2), torch.ones(1, 2, dtype=torch.int64)])
    with pytest.raises(TypeError, match=r"argument `y\['k'\]`, replica 1: .*dtype torch.int64 instead of torch.float32"):
        f(torch.ones(1, 2), y={"k": bad})
    with pytest.raises(TypeError, match=r"argument `y\['k'\]`, replica 0: 'str' does not match .*not a tensor"):
        f(torch.ones(1, 2), {"k": distribute.PerReplica(["a", "b"])})
    with pytest.raises(TypeError, match=r"argument `x`: Can not cast"):
        f(torch.ones(1, 3), {"k": distribute.PerReplica([torch.ones(1, 2)] * 2)})


def test_mirrored_is_not_a_per_replica():
    f = distribute.function(lambda x: x, input_signature=[PerReplicaSpec(SPEC, SPEC)])
    with pytest.raises(TypeError, match="must be a PerReplica of 2 component\\(s\\).*received Mirrored"):
        f(distribute.Mirrored([torch.ones(1, 2), torch.ones(1, 2)]))


# -- 21.10: next(iterator) past the end -----------------------------------------------------
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_next_past_the_end_inside_a_function_raises_out_of_range(make_strategy):
    strategy = make_strategy()
    iterator = iter(strategy.experimental_distribute_dataset(Dataset.range(4).batch(4)))
    step = distribute.function(lambda: strategy.run(lambda x: x + 1, args=(next(iterator),)))
    step()
    with pytest.raises(OutOfRangeError, match="End of sequence") as info:
        step()
    assert isinstance(info.value.__cause__, StopIteration)
    with pytest.raises(OutOfRangeError):  # and again on every later call
        step()


@pytest.mark.parametrize("make_strategy", named_strategies())
def test_next_past_the_end_outside_a_function_raises_stop_iteration(make_strategy):
    iterator = iter(make_strategy().experimental_distribute_dataset(Dataset.range(4).batch(4)))
    next(iterator)
    with pytest.raises(StopIteration):
        next(iterator)
    with pytest.raises(OutOfRangeError):
        iterator.get_next()


def test_for_loops_inside_a_function_end_normally():
    f = distribute.function(lambda: [int(x.sum()) for x in Dataset.range(6).batch(3)])
    assert f() == [3, 12]


def test_jit_compiled_function_reports_out_of_range_too():
    it = iter([torch.tensor(1.0)])
    f = distribute.function(lambda: next(it), jit_compile=True)
    f()
    with pytest.raises(OutOfRangeError):
        f()
