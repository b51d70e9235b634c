"""Spec section 13.2, conformance item 24 (cluster resolvers), check by check."""

import json

import pytest

from distribute.cluster_resolver import (
    ClusterSpec,
    SimpleClusterResolver,
    TFConfigClusterResolver,
    UnionResolver,
    id_in_cluster,
    is_chief,
)


def simple(cluster):
    return SimpleClusterResolver(ClusterSpec(cluster))


def test_union_concatenates():
    union = UnionResolver(simple({"worker": ["a:1", "b:1"]}), simple({"worker": ["c:1"]}))
    assert union.cluster_spec().as_dict() == {"worker": ["a:1", "b:1", "c:1"]}


def test_union_list_and_overlapping_dict_raise_key_error():
    union = UnionResolver(simple({"worker": ["a:1", "b:1"]}), simple({"worker": {1: "x:1"}}))
    with pytest.raises(KeyError):
        union.cluster_spec()


def test_simple_resolver_master():
    resolver = SimpleClusterResolver(ClusterSpec({"worker": ["a:1", "b:2"]}), rpc_layer="grpc")
    assert resolver.master() == "grpc://"
    assert resolver.master("worker", 1) == "grpc://b:2"


def test_tf_config_master():
    # TF's observation used port 0 for the chief; ports must be 1..65535 here.
    config = {"cluster": {"worker": ["localhost:1", "localhost:2"], "chief": ["localhost:3"]},
              "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}
    resolver = TFConfigClusterResolver(environ={"TF_CONFIG": json.dumps(config)})
    assert resolver.master() == "grpc://localhost:2"
    single = {"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 0},
              "rpc_layer": "grpc"}
    assert TFConfigClusterResolver(environ={"TF_CONFIG": json.dumps(single)}).master() == ""


def test_is_chief_worker_0_without_chief():
    assert is_chief({"worker": ["a:1", "b:1"]}, "worker", 0)
    assert not is_chief({"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "worker", 0)


def test_id_in_cluster_worker_1_with_chief_is_2():
    assert id_in_cluster({"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "worker", 1) == 2
