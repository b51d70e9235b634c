"""SimpleClusterResolver(environment=None): TensorFlow's own multi-worker test set-up (issue 26.3)."""

from __future__ import annotations

import json

import pytest

from distribute.cluster_resolver import (ClusterConfigTypeError, ClusterSpec, SimpleClusterResolver,
                                         TFConfigClusterResolver)

_CONFIG = {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}}


def test_environment_none_means_no_environment() -> None:
    resolver = SimpleClusterResolver(ClusterSpec({"worker": ["a:1"]}), environment=None)
    assert resolver.environment is None
    assert resolver.cluster_spec().as_dict() == {"worker": ["a:1"]}


def test_tf_multi_worker_test_setup_is_accepted() -> None:
    tf_config = TFConfigClusterResolver(environ={"TF_CONFIG": json.dumps(_CONFIG)})
    resolver = SimpleClusterResolver(tf_config.cluster_spec(), task_type=tf_config.task_type,
                                     task_id=tf_config.task_id, environment=tf_config.environment)
    assert tf_config.environment is None and resolver.environment is None
    assert (resolver.task_type, resolver.task_id) == ("worker", 1)
    assert resolver.master("worker", 1) == "127.0.0.1:2"


@pytest.mark.parametrize("value", [3, b"google", {"TF_CONFIG": "{}"}])
def test_other_environments_are_still_refused(value: object) -> None:
    with pytest.raises(ClusterConfigTypeError, match="environment: expected a str .* or None") as info:
        SimpleClusterResolver(ClusterSpec({}), environment=value)
    assert isinstance(info.value, TypeError) and info.value.field == "environment"
