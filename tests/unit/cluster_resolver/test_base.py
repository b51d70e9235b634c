"""Tests of ClusterResolver, SimpleClusterResolver and UnionResolver (spec 11.2, 11.4, 11.5)."""

import pytest

from distribute.cluster_resolver import (
    ClusterConfigError,
    ClusterConfigTypeError,
    ClusterMergeError,
    ClusterResolver,
    ClusterSpec,
    SimpleClusterResolver,
    UnionResolver,
    format_master_url,
)


def simple(cluster, **kwargs):
    return SimpleClusterResolver(ClusterSpec(cluster), **kwargs)


class Minimal(ClusterResolver):
    def cluster_spec(self):
        return ClusterSpec({})

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        return ""


def test_base_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        ClusterResolver()


def test_base_defaults_and_setters():
    resolver = Minimal()
    assert (resolver.task_type, resolver.task_id, resolver.rpc_layer) == (None, None, None)
    assert resolver.environment == ""
    resolver.task_type, resolver.task_id, resolver.rpc_layer = "worker", 0, "grpc"
    assert (resolver.task_type, resolver.task_id, resolver.rpc_layer) == ("worker", 0, "grpc")
    assert resolver.num_accelerators() == {}


@pytest.mark.parametrize("attr, value, error", [
    ("task_type", 3, ClusterConfigTypeError), ("task_type", "", ClusterConfigError),
    ("task_id", "1", ClusterConfigTypeError), ("task_id", -1, ClusterConfigError),
    ("task_id", True, ClusterConfigTypeError), ("rpc_layer", "gprc", ClusterConfigError),
    ("rpc_layer", 1, ClusterConfigTypeError),
])
def test_setter_validation(attr, value, error):
    with pytest.raises(error, match=attr):
        setattr(Minimal(), attr, value)


def test_num_accelerators_validates_arguments():
    with pytest.raises(ClusterConfigTypeError):
        Minimal().num_accelerators(task_id="0")


def test_format_master_url():
    assert format_master_url("h:1", "grpc") == "grpc://h:1"
    assert format_master_url("h:1", None) == "h:1"
    assert format_master_url("h:1", "") == "h:1"


def test_simple_resolver():
    spec = ClusterSpec({"worker": ["a:1", "b:2"]})
    resolver = SimpleClusterResolver(spec, master="a:1", task_type="worker", task_id=1,
                                     environment="google", num_accelerators={"GPU": 2},
                                     rpc_layer="grpc")
    assert resolver.cluster_spec() is spec
    assert resolver.master() == "grpc://a:1"
    assert resolver.master("worker", 1) == "grpc://b:2"
    assert resolver.master("worker", 1, rpc_layer="tcp") == "tcp://b:2"
    assert resolver.master("worker") == "grpc://a:1"
    assert resolver.environment == "google"
    assert resolver.num_accelerators() == {"GPU": 2}
    assert (resolver.task_type, resolver.task_id) == ("worker", 1)


def test_simple_resolver_quirk_and_defaults():
    resolver = simple({"worker": ["a:1"]}, rpc_layer="grpc")
    assert resolver.master() == "grpc://"
    assert simple({}).master() == ""
    assert simple({}).num_accelerators() == {}
    assert simple({}).environment == ""


@pytest.mark.parametrize("kwargs, error, field", [
    ({"cluster_spec": {"worker": ["a:1"]}}, ClusterConfigTypeError, "cluster_spec"),
    ({"master": 5}, ClusterConfigTypeError, "master"),
    ({"environment": {"TF_CONFIG": "{}"}}, ClusterConfigTypeError, "environ="),
    ({"num_accelerators": {"GPU": -1}}, ClusterConfigTypeError, "num_accelerators"),
    ({"num_accelerators": ["GPU"]}, ClusterConfigTypeError, "num_accelerators"),
    ({"task_id": -2}, ClusterConfigError, "task_id"),
    ({"rpc_layer": "http"}, ClusterConfigError, "rpc_layer"),
])
def test_simple_resolver_errors(kwargs, error, field):
    arguments = {"cluster_spec": ClusterSpec({})}
    arguments.update(kwargs)
    with pytest.raises(error, match=field):
        SimpleClusterResolver(**arguments)


def test_simple_resolver_master_unknown_task():
    with pytest.raises(ValueError, match="No task with index 4"):
        simple({"worker": ["a:1"]}).master("worker", 4)


def test_union_concatenates_lists():
    union = UnionResolver(simple({"worker": ["a:1", "b:1"]}), simple({"worker": ["c:1"]}))
    assert union.cluster_spec().as_dict() == {"worker": ["a:1", "b:1", "c:1"]}


def test_union_merges_dicts_and_lists():
    second = simple({"worker": {2: "c:1"}, "ps": ["p:1"]})
    union = UnionResolver(simple({"worker": ["a:1"]}), second)
    assert union.cluster_spec().as_dict() == {"worker": {0: "a:1", 2: "c:1"}, "ps": ["p:1"]}


def test_union_dense_dict_concatenates_silently():
    union = UnionResolver(simple({"worker": {0: "x:1"}}), simple({"worker": ["a:1", "b:1"]}))
    assert union.cluster_spec().as_dict() == {"worker": ["x:1", "a:1", "b:1"]}


def test_union_duplicate_index_is_a_key_error():
    union = UnionResolver(simple({"worker": ["a:1", "b:1"]}), simple({"worker": {1: "x:1"}}))
    with pytest.raises(KeyError) as info:
        union.cluster_spec()
    assert isinstance(info.value, ClusterMergeError)
    assert "Duplicate keys detected when merging two ClusterSpecs: {1}" in str(info.value)


def test_union_duplicate_address_is_an_error():
    union = UnionResolver(simple({"worker": ["a:1"]}), simple({"ps": ["a:1"]}))
    with pytest.raises(ClusterConfigError, match="same address"):
        union.cluster_spec()


def test_union_takes_the_rest_from_the_first():
    first = simple({"worker": ["a:1"]}, master="a:1", task_type="worker", task_id=3,
                   environment="google", num_accelerators={"GPU": 1}, rpc_layer="grpc")
    union = UnionResolver(first, simple({"ps": ["p:1"]}))
    assert (union.task_type, union.task_id, union.rpc_layer) == ("worker", 3, "grpc")
    assert union.environment == "google"
    assert union.num_accelerators() == {"GPU": 1}
    assert union.master() == "grpc://a:1"
    assert union.master("ps", 0) == "grpc://p:1"


def test_union_overrides_including_task_id_zero():
    first = simple({"worker": ["a:1", "b:1"]}, task_type="worker", task_id=1, rpc_layer="grpc")
    union = UnionResolver(first, task_type="chief", task_id=0, rpc_layer="tcp")
    assert (union.task_type, union.task_id, union.rpc_layer) == ("chief", 0, "tcp")
    union.task_id = None
    assert union.task_id == 1
    union.task_type, union.rpc_layer = None, None
    assert (union.task_type, union.rpc_layer) == ("worker", "grpc")
    assert union.master("worker", 1) == "grpc://b:1"


def test_union_constructor_errors():
    with pytest.raises(ValueError, match="At least one ClusterResolver is required."):
        UnionResolver()
    with pytest.raises(ValueError, match=r"Unexpected kwargs provided \{'foo': 1\}"):
        UnionResolver(simple({}), foo=1)
    with pytest.raises(TypeError, match="All arguments must be a sub-class of `ClusterResolver`"):
        UnionResolver(simple({}), ClusterSpec({}))
    with pytest.raises(ClusterConfigError):
        UnionResolver(simple({}), task_id=-1)
