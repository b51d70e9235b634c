"""Tests of ClusterSpec (spec section 11.1)."""

import pytest

from distribute.cluster_resolver import (
    ClusterConfigError,
    ClusterConfigTypeError,
    ClusterSpec,
)
from distribute.cluster_resolver.cluster_spec import normalize_cluster
from distribute.errors import InvalidArgumentError


def sparse_spec():
    return ClusterSpec({"worker": {1: "w1:2222", 3: "w3:2222"}, "chief": ["c0:2222"]})


def test_from_lists():
    spec = ClusterSpec({"worker": ["a:1", "b:1"], "ps": ("p:1",)})
    assert spec.jobs == ["worker", "ps"]
    assert spec.as_dict() == {"worker": ["a:1", "b:1"], "ps": ["p:1"]}
    assert spec.num_tasks("worker") == 2
    assert spec.task_indices("worker") == [0, 1]
    assert spec.task_address("worker", 1) == "b:1"
    assert spec.job_tasks("ps") == ["p:1"]


def test_sparse_dict():
    spec = sparse_spec()
    assert spec.as_dict()["worker"] == {1: "w1:2222", 3: "w3:2222"}
    assert spec.task_indices("worker") == [1, 3]
    assert spec.num_tasks("worker") == 2
    assert spec.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert list(spec.tasks()) == [("worker", 1, "w1:2222"), ("worker", 3, "w3:2222"),
                                  ("chief", 0, "c0:2222")]


def test_dense_dict_comes_back_as_list():
    assert ClusterSpec({"worker": {1: "y:1", 0: "x:1"}}).as_dict() == {"worker": ["x:1", "y:1"]}


def test_jobs_keep_insertion_order_but_copy_is_sorted():
    spec = ClusterSpec({"worker": ["a:1"], "chief": ["c:1"]})
    assert spec.jobs == ["worker", "chief"]
    assert ClusterSpec(spec).jobs == ["chief", "worker"]
    assert ClusterSpec(spec) == spec


def test_bool_eq_hash_repr():
    assert not ClusterSpec({})
    assert ClusterSpec({"a": ["x:1"]})
    one = ClusterSpec({"worker": ["a:1"], "chief": ["c:1"]})
    two = ClusterSpec({"chief": ["c:1"], "worker": ["a:1"]})
    assert one == two and hash(one) == hash(two)
    assert one != ClusterSpec({"worker": ["a:1"]})
    assert one != {"worker": ["a:1"], "chief": ["c:1"]}
    assert repr(one) == "ClusterSpec({'chief': ['c:1'], 'worker': ['a:1']})"
    assert str(one) == repr(one)


def test_as_dict_is_a_copy():
    spec = ClusterSpec({"worker": ["a:1"]})
    spec.as_dict()["worker"].append("b:1")
    assert spec.num_tasks("worker") == 1


def test_unknown_job_and_index():
    spec = sparse_spec()
    with pytest.raises(ValueError, match="No such job in cluster: 'evaluator'"):
        spec.num_tasks("evaluator")
    with pytest.raises(InvalidArgumentError, match="No task with index 5 in job 'worker'"):
        spec.task_address("worker", 5)
    with pytest.raises(ValueError, match="No such job"):
        spec.task_indices("ps")
    with pytest.raises(ValueError, match="No such job"):
        spec.job_tasks("ps")


@pytest.mark.parametrize("call", [
    lambda s: s.num_tasks(1), lambda s: s.task_address("worker", "1"),
    lambda s: s.task_address("worker", True), lambda s: s.task_indices(None),
])
def test_lookup_argument_types(call):
    with pytest.raises(ClusterConfigTypeError):
        call(sparse_spec())


@pytest.mark.parametrize("cluster", [None, "worker", ["a:1"], 3])
def test_cluster_type_error(cluster):
    with pytest.raises(TypeError, match="`cluster` must be a dictionary mapping"):
        ClusterSpec(cluster)


@pytest.mark.parametrize("tasks", ["a:1", 5, None, {"a:1"}])
def test_tasks_type_error(tasks):
    with pytest.raises(TypeError, match="The tasks for job 'worker' must be a list or a "
                                        "dictionary from integers to strings"):
        ClusterSpec({"worker": tasks})


@pytest.mark.parametrize("tasks, error, text", [
    ({"1": "a:1"}, ClusterConfigTypeError, "cluster['worker'] key: expected a task index"),
    ({True: "a:1"}, ClusterConfigTypeError, "task index"),
    ({-1: "a:1"}, ClusterConfigError, "non-negative"),
    (["a:1", "a:1"], ClusterConfigError, "cluster['worker'][1]: expected an address no other"),
    (["a:1", "A:1"], ClusterConfigError, "cluster['worker'][0] has the same address"),
    (["a:1", 7], ClusterConfigTypeError, "cluster['worker'][1]"),
    (["a"], ClusterConfigError, "cluster['worker'][0]: expected an address"),
])
def test_task_errors_name_the_field(tasks, error, text):
    with pytest.raises(error) as info:
        ClusterSpec({"worker": tasks})
    assert text in str(info.value)


def test_duplicates_across_jobs():
    with pytest.raises(ClusterConfigError, match=r"cluster\['ps'\]\[0\].*cluster\['worker'\]\[0\]"):
        ClusterSpec({"worker": ["h:1"], "ps": ["h:1"]})


@pytest.mark.parametrize("job", [1, "", "a/b", "a:b", "a b"])
def test_job_name_errors(job):
    with pytest.raises((ClusterConfigError, ClusterConfigTypeError), match="job name"):
        ClusterSpec({job: ["a:1"]})


def test_normalize_string_indices():
    jobs = normalize_cluster({"worker": {"1": "a:1"}}, string_indices=True)
    assert jobs == {"worker": {1: "a:1"}}


def test_duplicate_index_after_string_conversion():
    with pytest.raises(ClusterConfigError, match="each task index once"):
        normalize_cluster({"worker": {"1": "a:1", 1: "b:1"}}, string_indices=True)


def test_immutable_slots():
    with pytest.raises(AttributeError):
        ClusterSpec({}).other = 1
