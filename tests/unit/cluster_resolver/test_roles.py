"""Tests of the multi-worker role helpers (spec 10.5, 11.10, 13.2 item 24)."""

import pytest

from distribute.cluster_resolver import (
    ClusterConfigError,
    ClusterConfigTypeError,
    ClusterSpec,
    collective_leader,
    coordination_service_leader,
    id_in_cluster,
    is_chief,
    leader_task,
    validate_cluster_spec,
    worker_count,
)

WITH_CHIEF = {"chief": ["c:1"], "worker": ["w0:1", "w1:1"], "ps": ["p:1"], "evaluator": ["e:1"]}
NO_CHIEF = {"worker": ["w0:1", "w1:1", "w2:1"]}


def test_is_chief():
    assert is_chief(WITH_CHIEF, "chief", 0)
    assert is_chief(WITH_CHIEF, "evaluator", 0)
    assert not is_chief(WITH_CHIEF, "worker", 0)
    assert not is_chief(WITH_CHIEF, "ps", 0)
    assert is_chief(NO_CHIEF, "worker", 0)
    assert not is_chief(NO_CHIEF, "worker", 1)
    assert is_chief(ClusterSpec(NO_CHIEF), "worker", 0)


def test_is_chief_empty_cluster():
    assert is_chief()
    assert is_chief({}, "worker", 0)


def test_id_in_cluster():
    assert id_in_cluster(WITH_CHIEF, "chief", 0) == 0
    assert id_in_cluster(WITH_CHIEF, "worker", 0) == 1
    assert id_in_cluster(WITH_CHIEF, "worker", 1) == 2
    assert id_in_cluster(WITH_CHIEF, "evaluator", 0) == 0
    assert id_in_cluster(NO_CHIEF, "worker", 2) == 2
    assert id_in_cluster(None, None, None) == 0


def test_id_in_cluster_sparse_workers_are_contiguous():
    spec = {"worker": {1: "a:1", 4: "b:1"}}
    assert id_in_cluster(spec, "worker", 1) == 0
    assert id_in_cluster(spec, "worker", 4) == 1
    assert is_chief(spec, "worker", 1)
    assert not is_chief(spec, "worker", 4)


def test_id_in_cluster_errors():
    with pytest.raises(ClusterConfigError, match="There is no id for task_type 'ps'"):
        id_in_cluster(WITH_CHIEF, "ps", 0)
    with pytest.raises(ClusterConfigError, match="task_id"):
        id_in_cluster(WITH_CHIEF, "worker", None)


def test_worker_count():
    assert worker_count(WITH_CHIEF, "worker") == 3
    assert worker_count(WITH_CHIEF, "chief") == 3
    assert worker_count(WITH_CHIEF, "evaluator") == 1
    assert worker_count({"worker": ["a:1"]}, "evaluator") == 1
    assert worker_count(NO_CHIEF, "worker") == 3
    assert worker_count({}, None) == 1
    with pytest.raises(ClusterConfigError, match="Unexpected `task_type` 'ps'"):
        worker_count(WITH_CHIEF, "ps")


def test_leaders():
    assert collective_leader(WITH_CHIEF, "worker", 1) == "/job:chief/replica:0/task:0"
    assert collective_leader(NO_CHIEF, "worker", 1) == "/job:worker/replica:0/task:0"
    assert collective_leader(WITH_CHIEF, "evaluator", 0) == ""
    assert collective_leader({}, None, None) == ""
    assert collective_leader({"ps": ["p:1"]}, "ps", 0) == ""
    assert coordination_service_leader(WITH_CHIEF) == "/job:ps/replica:0/task:0"
    assert coordination_service_leader(NO_CHIEF) == "/job:worker/replica:0/task:0"
    assert coordination_service_leader({"chief": ["c:1"]}) == "/job:chief/replica:0/task:0"
    assert coordination_service_leader({}) == ""
    assert leader_task(WITH_CHIEF) == ("chief", 0)
    assert leader_task({"worker": {2: "a:1"}}) == ("worker", 2)
    assert leader_task({"ps": ["p:1"]}) is None


@pytest.mark.parametrize("cluster, task_type, task_id, text", [
    ({"foo": ["a:1"]}, None, None, "Disallowed task type found in cluster spec: ['foo']"),
    ({"chief": ["a:1", "b:1"]}, "chief", 0, "at most one 'chief' task"),
    ({"evaluator": ["a:1", "b:1"]}, None, None, "at most one 'evaluator' task"),
    ({"chief": ["a:1", "b:1"]}, None, None, "at most one 'chief' task"),
    (NO_CHIEF, "chief", 0, "task_type: expected one of the cluster's jobs ['worker']"),
    (NO_CHIEF, "boss", 0, "task_type: expected one of ('chief'"),
    (NO_CHIEF, "worker", 3, "The `task_id` 3 exceeds the maximum id of worker"),
    ({"worker": {1: "a:1"}}, "worker", 0, "task indices of 'worker' are [1]"),
    (NO_CHIEF, "evaluator", 1, "The `task_id` 1 exceeds"),
    (NO_CHIEF, "worker", -1, "task_id: expected a non-negative int"),
])
def test_validate_errors(cluster, task_type, task_id, text):
    with pytest.raises(ClusterConfigError) as info:
        validate_cluster_spec(cluster, task_type, task_id)
    assert text in str(info.value)


def test_validate_accepts():
    validate_cluster_spec(WITH_CHIEF, "ps", 0)
    validate_cluster_spec(NO_CHIEF, "evaluator", 0)
    validate_cluster_spec({}, "worker", 5)
    validate_cluster_spec(None, None, None)


@pytest.mark.parametrize("bad", [["a:1"], "x", 3])
def test_cluster_spec_argument_type(bad):
    with pytest.raises(ClusterConfigTypeError, match="cluster_spec"):
        is_chief(bad, "worker", 0)


def test_task_id_type():
    with pytest.raises(ClusterConfigTypeError, match="task_id"):
        validate_cluster_spec(NO_CHIEF, "worker", "0")
