"""Tests of TFConfigClusterResolver and the TF_CONFIG parser (spec 11.3, 11.10; F13)."""

import json
import time

import pytest

from distribute.cluster_resolver import (
    ClusterConfigError,
    ClusterConfigTypeError,
    ClusterSpec,
    TFConfigClusterResolver,
    TFConfigError,
    make_tf_config,
)
from distribute.cluster_resolver.tf_config import MAX_TF_CONFIG_CHARS, parse_tf_config

CLUSTER = {"chief": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}


def resolver(config, **kwargs):
    text = config if isinstance(config, str) else json.dumps(config)
    return TFConfigClusterResolver(environ={"TF_CONFIG": text}, **kwargs)


def test_reads_cluster_task_and_rpc_layer():
    r = resolver({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})
    assert r.cluster_spec() == ClusterSpec(CLUSTER)
    assert (r.task_type, r.task_id, r.rpc_layer, r.environment) == ("worker", 1, "grpc", None)
    assert r.master() == "grpc://localhost:3"
    assert r.master("chief", 0) == "grpc://localhost:1"
    assert r.master(rpc_layer="grpc+verbs") == "grpc+verbs://localhost:3"
    assert r.master("worker", 0, rpc_layer="tcp") == "tcp://localhost:2"


def test_no_tf_config_is_a_single_worker():
    for environ in ({}, {"TF_CONFIG": ""}, {"TF_CONFIG": "  "}, {"TF_CONFIG": "{}"}):
        r = TFConfigClusterResolver(environ=environ)
        assert (r.cluster_spec().as_dict(), r.task_type, r.task_id, r.rpc_layer, r.master()) == \
            ({}, None, None, None, "")


def test_single_task_cluster_master_is_empty():
    r = resolver({"cluster": {"worker": ["localhost:2"]}, "task": {"type": "worker", "index": 0},
                  "rpc_layer": "grpc"})
    assert r.master() == ""


def test_session_master_wins():
    r = resolver({"cluster": CLUSTER, "task": {"type": "worker", "index": 0},
                  "session_master": "grpc://x:9"})
    assert r.master() == "grpc://x:9"


def test_overrides_win_and_are_cast():
    r = resolver({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}},
                 task_type="chief", task_id="0", rpc_layer="tcp")
    assert (r.task_type, r.task_id, r.rpc_layer) == ("chief", 0, "tcp")
    assert r.master() == "tcp://localhost:1"


def test_override_without_task_in_config():
    r = resolver({"cluster": CLUSTER}, task_type="worker", task_id=0)
    assert (r.task_type, r.task_id) == ("worker", 0)


def test_setters():
    r = resolver({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})
    r.task_id = 0
    assert r.task_id == 0
    r.task_type = "chief"
    assert r.task_type == "chief"
    r.task_id = None
    assert r.task_id == 1
    r.rpc_layer = "grpc"
    assert r.master("worker", 1) == "grpc://localhost:3"
    with pytest.raises(ClusterConfigError):
        r.task_id = -1


def test_tf_config_is_read_on_every_call():
    config = {"cluster": CLUSTER, "task": {"type": "worker", "index": 1}}
    environ = {"TF_CONFIG": json.dumps(config)}
    r = TFConfigClusterResolver(environ=environ)
    environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["h:5", "h:6"]},
                                       "task": {"type": "worker", "index": 0}})
    assert r.cluster_spec().as_dict() == {"worker": ["h:5", "h:6"]}
    assert r.task_id == 0
    environ["TF_CONFIG"] = "{bad"
    with pytest.raises(TFConfigError):
        r.cluster_spec()


def test_master_needs_a_task():
    r = resolver({"cluster": CLUSTER}, task_type="worker", task_id=0)
    r.task_type = None
    with pytest.raises(ClusterConfigError, match="master"):
        r.master()


# The launcher forms.

def test_ray_train_form():
    config = {"cluster": {"worker": ["10.0.0.1:41000", "[2001:db8::2]:41001"]},
              "task": {"type": "worker", "index": 1}}
    r = resolver(config)
    assert r.master() == "[2001:db8::2]:41001"


def test_kubeflow_and_ai_platform_extra_keys_are_ignored():
    config = {"cluster": {"chief": ["c-0:2222"], "worker": ["w-0:2222"], "ps": ["p-0:2222"]},
              "task": {"type": "ps", "index": 0, "trial": "1", "cloud": "id"},
              "environment": "cloud", "job": {"args": ["--x"]}}
    assert resolver(config).task_type == "ps"


def test_master_job_means_chief():
    config = {"cluster": {"master": ["m:2222"], "worker": ["w:2222"]},
              "task": {"type": "master", "index": 0}}
    r = resolver(config)
    assert r.cluster_spec().as_dict() == {"chief": ["m:2222"], "worker": ["w:2222"]}
    assert r.task_type == "chief"


def test_evaluator_outside_the_cluster():
    r = resolver({"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}})
    assert (r.task_type, r.task_id) == ("evaluator", 0)


def test_sparse_string_keys_and_string_index():
    r = resolver({"cluster": {"worker": {"1": "a:1", "3": "b:1"}}, "task": {"type": "worker",
                                                                          "index": "3"}})
    assert r.cluster_spec().task_indices("worker") == [1, 3]
    assert r.task_id == 3


def test_task_without_cluster_is_a_single_worker():
    r = resolver({"task": {"type": "worker", "index": 0}})
    assert (r.task_type, r.task_id, r.master()) == ("worker", 0, "")


# Malformed TF_CONFIG: each fails at construction, names the field, in well under a second.

def _task(type_, index):
    return {"type": type_, "index": index}


BAD = [
    ("{not json", "TF_CONFIG: expected a JSON object", "not valid JSON"),
    ("[1, 2]", "TF_CONFIG: expected a JSON object", ""),
    ('{"task": {"type": "worker", "index": NaN}}', "TF_CONFIG: expected strict JSON", "NaN"),
    ('{"task": 1, "task": 2}', "TF_CONFIG: expected each key once", "'task'"),
    ({"cluster": CLUSTER}, "TF_CONFIG['task']: expected this process's task", ""),
    ({"cluster": CLUSTER, "task": "worker"}, "TF_CONFIG['task']: expected an object", ""),
    ({"cluster": CLUSTER, "task": {"index": 0}}, "TF_CONFIG['task']: expected a task type", ""),
    ({"cluster": CLUSTER, "task": {"type": "worker"}}, "TF_CONFIG['task']: expected a task index",
     ""),
    ({"cluster": CLUSTER, "task": _task("ps", 0)}, "TF_CONFIG['task']['type']: expected one of "
     "the cluster's jobs ['chief', 'worker']", ""),
    ({"cluster": CLUSTER, "task": _task("boss", 0)}, "TF_CONFIG['task']['type']: expected one of",
     ""),
    ({"cluster": CLUSTER, "task": _task(3, 0)}, "TF_CONFIG['task']['type']", ""),
    ({"cluster": CLUSTER, "task": _task("worker", 2)}, "TF_CONFIG['task']['index']: expected one "
     "of the task indices of 'worker': [0, 1]; received 2", ""),
    ({"cluster": CLUSTER, "task": _task("worker", -1)}, "TF_CONFIG['task']['index']: expected a "
     "non-negative integer", ""),
    ({"cluster": CLUSTER, "task": _task("worker", 1.5)}, "TF_CONFIG['task']['index']", ""),
    ({"cluster": CLUSTER, "task": _task("worker", True)}, "TF_CONFIG['task']['index']", ""),
    ({"cluster": CLUSTER, "task": _task("worker", "one")}, "TF_CONFIG['task']['index']", ""),
    ({"cluster": CLUSTER, "task": _task("evaluator", 1)}, "TF_CONFIG['task']['index']: expected 0",
     ""),
    ({"task": _task("worker", 1)}, "TF_CONFIG['task']['index']: expected 0, the only worker", ""),
    ({"cluster": {"chief": ["a:1", "b:1"]}, "task": _task("chief", 0)},
     "TF_CONFIG['cluster']['chief']: expected at most one chief task", ""),
    ({"cluster": {"evaluator": ["a:1", "b:1"]}, "task": _task("evaluator", 0)},
     "TF_CONFIG['cluster']['evaluator']: expected at most one evaluator", ""),
    ({"cluster": {"master": ["a:1"], "chief": ["b:1"]}, "task": _task("chief", 0)},
     "TF_CONFIG['cluster']: expected either a 'chief' or a 'master' job", ""),
    ({"cluster": {"trainer": ["a:1"]}, "task": _task("trainer", 0)},
     "TF_CONFIG['cluster']: expected job names among", "'trainer'"),
    ({"cluster": ["a:1"]}, "`cluster` must be a dictionary", "TF_CONFIG['cluster']"),
    ({"cluster": None}, "`cluster` must be a dictionary", "TF_CONFIG['cluster']"),
    ({"cluster": {"worker": "a:1"}, "task": _task("worker", 0)}, "The tasks for job 'worker'",
     "TF_CONFIG['cluster']['worker']"),
    ({"cluster": {"worker": {"x": "a:1"}}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['worker'] key: expected a task index", ""),
    ({"cluster": {"worker": ["a"]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['worker'][0]: expected an address 'host:port'", "Add the port"),
    ({"cluster": {"worker": ["a:b"]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['worker'][0]", "must be an integer"),
    ({"cluster": {"worker": ["a:0"]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['worker'][0]", "port 0"),
    ({"cluster": {"worker": ["a:70000"]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['worker'][0]", "outside 1..65535"),
    ({"cluster": {"worker": ["::1:80"]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['worker'][0]", "without brackets"),
    ({"cluster": {"worker": [2222]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['worker'][0]", "as a string"),
    ({"cluster": {"worker": ["a:1", "b:2", "a:1"]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['worker'][2]: expected an address no other task uses",
     "TF_CONFIG['cluster']['worker'][0] has the same address"),
    ({"cluster": {"worker": ["a:1"], "ps": ["a:1"]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']['ps'][0]", "same address"),
    ({"cluster": {"Worker": ["a:1"]}, "task": _task("worker", 0)},
     "TF_CONFIG['cluster']: expected job names", "write 'worker'"),
    ({"cluster": CLUSTER, "task": _task("Chief", 0)}, "TF_CONFIG['task']['type']",
     "write 'chief'"),
    ({"rpc_layer": "gprc"}, "TF_CONFIG['rpc_layer']: expected one of", ""),
    ({"rpc_layer": 5}, "TF_CONFIG['rpc_layer']: expected a string", ""),
    ({"session_master": 5}, "TF_CONFIG['session_master']: expected a string", ""),
]


@pytest.mark.parametrize("config, start, detail", BAD)
def test_malformed_tf_config_names_the_field(config, start, detail):
    began = time.perf_counter()
    with pytest.raises(TFConfigError) as info:
        resolver(config)
    assert time.perf_counter() - began < 0.5
    message = str(info.value)
    assert start in message, message
    assert detail in message, message
    assert isinstance(info.value, ValueError)
    assert info.value.field and info.value.field.startswith("TF_CONFIG")


def test_oversized_tf_config():
    with pytest.raises(TFConfigError, match="at most"):
        resolver(" " * (MAX_TF_CONFIG_CHARS + 1) + "{}")


@pytest.mark.parametrize("kwargs, field", [
    ({"task_type": "ps", "task_id": 0}, "task_type argument"),
    ({"task_type": "worker", "task_id": 7}, "task_id argument"),
])
def test_bad_overrides_name_the_argument(kwargs, field):
    with pytest.raises(TFConfigError, match=field):
        resolver({"cluster": CLUSTER, "task": _task("worker", 0)}, **kwargs)


def test_half_a_task_override():
    with pytest.raises(TFConfigError, match="TF_CONFIG\\['task'\\]\\['index'\\]: expected a value"):
        resolver({"cluster": CLUSTER}, task_type="worker")


@pytest.mark.parametrize("kwargs, error", [
    ({"task_id": -1}, ClusterConfigError), ({"task_id": 1.0}, ClusterConfigTypeError),
    ({"rpc_layer": "http"}, ClusterConfigError), ({"environment": {"TF_CONFIG": "{}"}},
                                                  ClusterConfigTypeError),
    ({"environ": "TF_CONFIG={}"}, ClusterConfigTypeError),
])
def test_constructor_argument_errors(kwargs, error):
    with pytest.raises(error):
        TFConfigClusterResolver(**{"environ": {}, **kwargs})


def test_environment_is_kept():
    assert TFConfigClusterResolver(environment="google", environ={}).environment == "google"


def test_make_tf_config_round_trips():
    spec = ClusterSpec({"chief": ["c:1"], "worker": {1: "w:1"}})
    text = make_tf_config(spec, "worker", 1, rpc_layer="grpc")
    r = TFConfigClusterResolver(environ={"TF_CONFIG": text})
    assert r.cluster_spec() == spec
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, "grpc")
    with pytest.raises(TFConfigError):
        make_tf_config(spec, "worker", 0)


def test_parse_tf_config_directly():
    parsed = parse_tf_config(None)
    assert not parsed.cluster and parsed.task_type is None
