"""distribute.function: tf.function's input_signature checks, jit_compile, use with strategies."""

import collections
import os

import numpy as np
import pytest
import torch
import torch._inductor.config

import distribute
from distribute import TensorSpec
from distribute.function import Function
from tests.strategies import local_replica_ids, named_strategies

VECTOR = TensorSpec(shape=(None,), dtype=torch.float32)
Pair = collections.namedtuple("Pair", ["a", "b"])


def double(x):
    """Doubles x."""
    return 2 * x


# -- wrapping -------------------------------------------------------------------------------
def test_without_signature_calls_through():
    f = distribute.function(lambda x, y=1, *, z=2: (x, y, z))
    assert f("a") == ("a", 1, 2)
    assert f([1], y=3, z=4) == ([1], 3, 4)  # nothing is converted without a signature


def test_decorator_forms_and_properties():
    @distribute.function
    def plain(x):
        return x + 1

    @distribute.function(input_signature=[VECTOR])
    def checked(x):
        return x + 1

    assert isinstance(plain, Function)
    assert plain(1) == 2 and plain.input_signature is None and plain.jit_compile is False
    assert checked.input_signature == (VECTOR,)
    assert checked.python_function(1) == 2
    wrapped = distribute.function(double)
    assert wrapped.__name__ == "double" and wrapped.__doc__ == "Doubles x."


def test_other_tf_function_options_are_accepted():
    f = distribute.function(double, autograph=False, reduce_retracing=True, jit_compile=None)
    assert f.jit_compile is False
    assert f(3) == 6


def test_methods_bind_self_outside_the_signature():
    class Model:
        scale = 3.0

        @distribute.function(input_signature=[VECTOR])
        def __call__(self, x):
            return self.scale * x

    model = Model()
    assert model([1.0, 2.0]).tolist() == [3.0, 6.0]
    assert model(x=torch.ones(1)).tolist() == [3.0]
    with pytest.raises(TypeError, match="Can not cast"):
        model(torch.ones(2, 2))
    assert isinstance(Model.__call__, Function)


# -- definition-time validation -------------------------------------------------------------
@pytest.mark.parametrize("signature,match", [
    (VECTOR, "input_signature must be either a tuple or a list"),
    ("x", "input_signature must be either a tuple or a list"),
    ([3], "input_signature must be a possibly nested sequence of TensorSpec objects, got invalid args \\[3\\]"),
    ([VECTOR, {"a": torch.float32}], "invalid args"),
])
def test_bad_input_signature(signature, match):
    with pytest.raises(TypeError, match=match):
        distribute.function(double, input_signature=signature)


def test_signature_longer_than_the_parameters():
    with pytest.raises(TypeError, match="input_signature contains 1 extra type constraints"):
        distribute.function(double, input_signature=[VECTOR, VECTOR])


@pytest.mark.parametrize("fn", [3, "double", None])
def test_not_callable(fn):
    if fn is None:  # function(None) is the decorator factory
        assert callable(distribute.function(None))
        return
    with pytest.raises(TypeError, match="is not a callable object"):
        distribute.function(fn)


@pytest.mark.parametrize("jit", ["yes", 1, 0.0])
def test_jit_compile_must_be_bool(jit):
    with pytest.raises(TypeError, match="jit_compile must be a bool or None"):
        distribute.function(double, jit_compile=jit)


# -- call-time binding ------------------------------------------------------------------------
def test_matching_tensors_pass_unchanged():
    seen = []
    f = distribute.function(lambda x: seen.append(x) or x, input_signature=[VECTOR])
    t = torch.ones(3)
    assert f(t) is t and seen == [t]
    assert f(torch.ones(0)).shape == (0,)


@pytest.mark.parametrize("value,expected", [([1.0, 2.0], [2.0, 4.0]), ([1, 2], [2.0, 4.0]), ([True], [2.0]),
                                            (np.ones(2), [2.0, 2.0]), ((3.0,), [6.0])])
def test_python_and_numpy_values_are_converted(value, expected):
    f = distribute.function(double, input_signature=[VECTOR])
    out = f(value)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert out.tolist() == expected


@pytest.mark.parametrize("value,match", [
    (torch.ones(2, 2), "Can not cast TensorSpec\\(shape=\\(2, 2\\), dtype=torch.float32"),
    (torch.ones(2, dtype=torch.int64), "dtype=torch.int64"),
    (torch.ones(2, dtype=torch.float64), "dtype=torch.float64"),
    (3.0, "Can not cast TensorSpec\\(shape=\\(\\)"),
    (None, "Attempt to convert a value \\(None\\)"),
    ("abc", "Attempt to convert a value"),
])
def test_values_that_do_not_fit_raise_type_error(value, match):
    f = distribute.function(double, input_signature=[VECTOR])
    with pytest.raises(TypeError, match="Binding inputs to double failed due to") as info:
        f(value)
    assert info.match(match)
    assert "for input_signature: [TensorSpec(shape=(None,), dtype=torch.float32" in str(info.value)


def test_floats_are_not_truncated_into_integer_specs():
    f = distribute.function(double, input_signature=[TensorSpec((None,), torch.int32)])
    assert f([1, 2]).dtype == torch.int32
    with pytest.raises(TypeError, match="Cannot convert \\[1.5\\] to a tensor of dtype torch.int32"):
        f([1.5])
    g = distribute.function(double, input_signature=[TensorSpec((None,), torch.bool)])
    with pytest.raises(TypeError, match="Cannot convert"):
        g([1, 0])


@pytest.mark.parametrize("args,kwargs,match", [
    ((torch.ones(1), torch.ones(1)), {}, "too many positional arguments"),
    ((), {}, "missing a required argument: 'x'"),
    ((), {"x": torch.ones(1), "y": torch.ones(1)}, "unexpected keyword argument 'y'"),
])
def test_argument_count_errors(args, kwargs, match):
    f = distribute.function(double, input_signature=[VECTOR])
    with pytest.raises(TypeError, match=match):
        f(*args, **kwargs)


def test_keyword_arguments_are_bound_and_checked():
    f = distribute.function(lambda x, y: x - y, input_signature=[VECTOR, VECTOR])
    assert f(y=[1.0], x=[3.0]).tolist() == [2.0]
    with pytest.raises(TypeError, match="Can not cast"):
        f(torch.ones(1), y=torch.ones(1, 1))


def test_parameters_without_a_constraint():
    add = distribute.function(lambda x, y=2.0: x + y, input_signature=[VECTOR])
    assert add([1.0]).tolist() == [3.0]  # the default is used
    with pytest.raises(TypeError, match="input_signature missing type constraint for y"):
        add([1.0], 5.0)
    kw_only = distribute.function(lambda x, *, scale=1.0: x * scale, input_signature=[VECTOR])
    with pytest.raises(TypeError, match="missing type constraint for scale"):
        kw_only([1.0], scale=2.0)


def test_varargs_take_the_remaining_constraints():
    total = distribute.function(lambda *xs: sum(xs), input_signature=[VECTOR, VECTOR])
    assert total([1.0], [2.0]).tolist() == [3.0]
    with pytest.raises(TypeError, match="2 constraint\\(s\\) for \\*xs but 1 value\\(s\\)"):
        total([1.0])


def test_unknown_dimensions_and_rank():
    any_shape = distribute.function(lambda x: x.shape, input_signature=[TensorSpec(None, torch.float32)])
    assert any_shape(torch.ones(2, 3, 4)) == (2, 3, 4)
    fixed = distribute.function(lambda x: x.shape, input_signature=[TensorSpec((None, 3), torch.float32)])
    assert fixed(torch.ones(5, 3)) == (5, 3)
    with pytest.raises(TypeError, match="Can not cast"):
        fixed(torch.ones(5, 4))


def test_nested_signatures():
    spec = [{"a": VECTOR, "b": [TensorSpec((2,), torch.int64), VECTOR]}, Pair(VECTOR, TensorSpec((), torch.float32))]
    f = distribute.function(lambda d, p: (d["a"].sum() + d["b"][1].sum() + p.a.sum() + p.b, d["b"][0].dtype),
                            input_signature=spec)
    total, dtype = f({"a": [1.0], "b": [[1, 2], torch.ones(2)]}, Pair([1.0], 1.0))
    assert float(total) == 5.0 and dtype == torch.int64


@pytest.mark.parametrize("value,match", [
    ({"b": torch.ones(1)}, "different keys"),
    ([torch.ones(1)], "different keys or type"),
    ({"a": torch.ones(1), "extra": torch.ones(1)}, "different keys"),
])
def test_nested_dict_mismatch(value, match):
    f = distribute.function(lambda d: d, input_signature=[{"a": VECTOR}])
    with pytest.raises(TypeError, match=match):
        f(value)


@pytest.mark.parametrize("value", [(torch.ones(1),), [torch.ones(1), torch.ones(1)], (torch.ones(1), torch.ones(1))])
def test_nested_sequence_mismatch(value):
    f = distribute.function(lambda p: p, input_signature=[Pair(VECTOR, VECTOR)])
    with pytest.raises(TypeError, match="Can not cast"):
        f(value)
    g = distribute.function(lambda p: p, input_signature=[[VECTOR, VECTOR, VECTOR]])
    with pytest.raises(TypeError, match="Can not cast"):
        g(value)


def test_string_specs_accept_bytes():
    f = distribute.function(lambda s: s, input_signature=[TensorSpec((), "string")])
    assert f(b"abc") == b"abc"
    with pytest.raises(TypeError, match="Can not cast"):
        f(torch.ones(()))


# -- with strategies ----------------------------------------------------------------------------
@pytest.mark.parametrize("make_strategy", named_strategies())
def test_signature_checked_inside_each_replica(make_strategy):
    s = make_strategy()
    n = len(local_replica_ids(s))  # this process's replicas
    with s.scope():
        model = torch.nn.Linear(3, 1, bias=False)
        torch.nn.init.ones_(model.weight)

    @distribute.function(input_signature=[TensorSpec((None, 3), torch.float32)])
    def forward(x):
        return model(x).sum()

    batches = s.experimental_distribute_values_from_function(
        lambda ctx: torch.full((ctx.replica_id_in_sync_group + 1, 3), 1.0))
    out = s.run(forward, args=(batches,))
    assert [float(v) for v in s.experimental_local_results(out)] == [3.0 * (i + 1) for i in local_replica_ids(s)]
    with pytest.raises(TypeError, match="Binding inputs to forward failed"):
        s.run(forward, args=(torch.ones(2, 4),))
    assert len(s.experimental_local_results(s.run(lambda: torch.ones(1)))) == n  # nothing left blocked


def test_function_wrapping_a_training_step_run():
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        w = distribute.Variable(torch.zeros(2))
    opt = distribute.optim.SGD([w], lr=0.5)

    def replica_step(x):
        opt.zero_grad()
        distribute.nn.compute_average_loss((x - w) ** 2, global_batch_size=4).backward()
        opt.step()

    @distribute.function(input_signature=[TensorSpec((4, 2), torch.float32)])
    def train_step(batch):
        s.run(replica_step, args=(s.experimental_distribute_values_from_function(
            lambda ctx: batch[2 * ctx.replica_id_in_sync_group:2 * ctx.replica_id_in_sync_group + 2]),))

    train_step([[1.0, 2.0]] * 4)
    # the gradient of mean over the batch of (x - w)^2 summed over 2 columns is -2 * x at w = 0
    assert [c.tolist() for c in w.values] == [[1.0, 2.0], [1.0, 2.0]]
    with pytest.raises(TypeError, match="Binding inputs to train_step failed"):
        train_step(torch.ones(3, 2))


# -- jit_compile ----------------------------------------------------------------------------------
def _branch(x):
    # torch.compiler.is_compiling() is True only while torch.compile traces the function
    return x * 2 if torch.compiler.is_compiling() else x * 3


_INDUCTOR_ENV = "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR"  # inductor sets it before loading each kernel


@pytest.mark.slow  # torch.compile's first compilation of a graph takes seconds (about 20 s on a cold cache)
def test_jit_compile_uses_torch_compile_also_inside_replicas(monkeypatch):
    monkeypatch.setattr(torch._inductor.config, "compile_threads", 1)  # no compile worker pool
    had_env = _INDUCTOR_ENV in os.environ
    try:
        _check_jit_compile()
    finally:
        if not had_env:  # the suite guards the environment; this variable is inductor's own
            os.environ.pop(_INDUCTOR_ENV, None)


def _check_jit_compile():
    compiled = distribute.function(_branch, input_signature=[VECTOR], jit_compile=True)
    eager = distribute.function(_branch, input_signature=[VECTOR])
    assert eager([1.0]).tolist() == [3.0]
    assert compiled([1.0, 2.0]).tolist() == [2.0, 4.0]
    with pytest.raises(TypeError, match="Can not cast"):  # checked before compiling
        compiled(torch.ones(2, 2))
    s = distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    with s.scope():
        v = distribute.Variable(torch.zeros(2))
    s.run(lambda: v.assign(torch.full((2,), float(distribute.get_replica_context().replica_id_in_sync_group))))
    out = s.run(lambda: compiled(v + 1.0))  # each replica's own component reaches the compiled code
    assert [t.tolist() for t in out.values] == [[2.0, 2.0], [4.0, 4.0]]
