"""Tests of SlurmClusterResolver and the Slurm list syntax (spec 11.6)."""

import pytest

from distribute.cluster_resolver import (
    ClusterAllocationError,
    ClusterConfigError,
    ClusterConfigTypeError,
    MissingEnvironmentError,
    SlurmClusterResolver,
    expand_hostlist,
    expand_tasks_per_node,
)


def slurm_env(rank=0, tasks=4, nodelist="n[1-2]", per_node="2(x2)", **extra):
    env = {"SLURM_PROCID": str(rank), "SLURM_STEP_NUM_TASKS": str(tasks),
           "SLURM_STEP_NODELIST": nodelist, "SLURM_STEP_TASKS_PER_NODE": per_node}
    env.update(extra)
    return env


@pytest.mark.parametrize("hostlist, hosts", [
    ("n[1-2],m5,o[3-4,6,7-9]", ["n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"]),
    ("n[01-03]", ["n01", "n02", "n03"]),
    ("a,a", ["a", "a"]),
    ("single", ["single"]),
    ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]),
    ("n[1-2]-ib", ["n1-ib", "n2-ib"]),
    ("n[7]", ["n7"]),
])
def test_expand_hostlist(hostlist, hosts):
    assert expand_hostlist(hostlist) == hosts


@pytest.mark.parametrize("hostlist", ["n[1-2", "n1-2]", "n[[1]]", "n[a-b]", "n[3-1]", "a,,b",
                                      ",a", "n[]", "n[1-]"])
def test_expand_hostlist_errors(hostlist):
    with pytest.raises(ClusterConfigError, match="SLURM_STEP_NODELIST"):
        expand_hostlist(hostlist, "SLURM_STEP_NODELIST")


def test_expand_tasks_per_node():
    assert expand_tasks_per_node("3(x2),2,1") == [3, 3, 2, 1]
    assert expand_tasks_per_node("4") == [4]


@pytest.mark.parametrize("text", ["", "x", "2(x0)", "0", "2(x)", "2(3)", "2,,1"])
def test_expand_tasks_per_node_errors(text):
    with pytest.raises(ValueError, match="tasks_per_node"):
        expand_tasks_per_node(text)


def test_list_type_errors():
    with pytest.raises(ClusterConfigTypeError):
        expand_hostlist(["n1"])
    with pytest.raises(ClusterConfigTypeError):
        expand_tasks_per_node(2)


def test_default_worker_job_over_two_nodes():
    environ = slurm_env(rank=3)
    r = SlurmClusterResolver(environ=environ, gpus_per_node=4)
    assert r.get_task_info() == ("worker", 3)  # known before cluster_spec(), unlike TF
    spec = r.cluster_spec()
    assert spec.as_dict() == {"worker": ["n1:8888", "n1:8889", "n2:8888", "n2:8889"]}
    assert environ["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert r.assigned_gpus == [2, 3]
    assert r.num_accelerators() == {"GPU": 2}
    assert r.master() == "grpc://n2:8889"
    assert r.master("worker", 0, rpc_layer="tcp") == "tcp://n1:8888"


def test_jobs_are_dealt_in_sorted_order():
    r = SlurmClusterResolver(jobs={"worker": 3, "ps": 1}, environ=slurm_env(rank=1),
                             gpus_per_node=0, auto_set_gpu=False)
    assert r.cluster_spec().as_dict() == {"ps": ["n1:8888"],
                                          "worker": ["n1:8889", "n2:8888", "n2:8889"]}
    assert r.get_task_info() == ("worker", 0)


def test_hosts_are_sorted_and_ports_follow_port_base():
    r = SlurmClusterResolver(port_base=9000, gpus_per_node=0, auto_set_gpu=False,
                             environ=slurm_env(nodelist="b,a", per_node="1,2", tasks=3))
    assert r.cluster_spec().as_dict() == {"worker": ["a:9000", "a:9001", "b:9000"]}


def test_tasks_per_node_int_and_dict():
    r = SlurmClusterResolver(tasks_per_node=1, gpus_per_node=0, auto_set_gpu=False,
                             environ=slurm_env(tasks=2, per_node="garbage-unused"))
    assert r.cluster_spec().num_tasks("worker") == 2
    r = SlurmClusterResolver(jobs={"worker": 3}, tasks_per_node={"x": 2, "y": 1},
                             gpus_per_node=0, auto_set_gpu=False, environ={"SLURM_PROCID": "2"})
    assert r.cluster_spec().as_dict() == {"worker": ["x:8888", "x:8889", "y:8888"]}


def test_no_gpus_does_not_touch_cuda_visible_devices():
    environ = slurm_env(CUDA_VISIBLE_DEVICES="")
    r = SlurmClusterResolver(environ=environ)
    r.cluster_spec()
    assert environ["CUDA_VISIBLE_DEVICES"] == ""
    assert r.num_accelerators() == {"GPU": 0}
    assert r.assigned_gpus == []


def test_gpus_from_cuda_visible_devices():
    environ = slurm_env(rank=1, CUDA_VISIBLE_DEVICES="0,1,2,3")
    r = SlurmClusterResolver(environ=environ)
    r.cluster_spec()
    assert environ["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert SlurmClusterResolver(environ=slurm_env(CUDA_VISIBLE_DEVICES="NoDevFiles"),
                                auto_set_gpu=False).num_accelerators() == {"GPU": 0}


def test_gpus_default_from_torch():
    r = SlurmClusterResolver(environ=slurm_env(), auto_set_gpu=False)
    assert r.num_accelerators()["GPU"] >= 0


def test_auto_set_gpu_false_does_not_write():
    environ = slurm_env()
    SlurmClusterResolver(environ=environ, gpus_per_node=2, auto_set_gpu=False).cluster_spec()
    assert "CUDA_VISIBLE_DEVICES" not in environ


def test_rank_beyond_requested_jobs_has_no_task():
    r = SlurmClusterResolver(jobs={"worker": 2}, environ=slurm_env(rank=3), gpus_per_node=0)
    assert r.get_task_info() == (None, None)
    assert r.master() == ""
    assert r.master("worker", 1) == "grpc://n1:8889"


@pytest.mark.parametrize("missing", ["SLURM_PROCID", "SLURM_STEP_NUM_TASKS",
                                     "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE"])
def test_missing_variables(missing):
    environ = slurm_env()
    del environ[missing]
    with pytest.raises(RuntimeError, match=f"{missing} not found in environment. Not running "
                                           "inside a SLURM step?") as info:
        SlurmClusterResolver(environ=environ, gpus_per_node=0)
    assert isinstance(info.value, MissingEnvironmentError)
    assert info.value.variable == missing


@pytest.mark.parametrize("kwargs, env, error, text", [
    ({}, {"SLURM_PROCID": "x"}, ClusterConfigError, "SLURM_PROCID: expected a decimal integer"),
    ({}, {"SLURM_PROCID": "-1"}, ClusterConfigError, "SLURM_PROCID"),
    ({}, {"SLURM_PROCID": "4"}, ClusterConfigError, "SLURM_PROCID: expected a rank below 4"),
    ({}, {"SLURM_STEP_NUM_TASKS": "0"}, ClusterConfigError, "SLURM_STEP_NUM_TASKS"),
    ({}, {"SLURM_STEP_NUM_TASKS": "5"}, ClusterAllocationError,
     "Requested 5 tasks but only 4 were assigned"),
    ({}, {"SLURM_STEP_TASKS_PER_NODE": "2"}, ClusterConfigError,
     "SLURM_STEP_TASKS_PER_NODE: expected 2 counts"),
    ({}, {"SLURM_STEP_NODELIST": "n[1-"}, ClusterConfigError, "SLURM_STEP_NODELIST"),
    ({"gpus_per_node": 2, "gpus_per_task": 2}, {}, ClusterAllocationError,
     "Requested more GPUs per node than available"),
    ({"port_base": 65535}, {}, ClusterConfigError, "port_base: expected a port that leaves room"),
    ({"port_base": 0}, {}, ClusterConfigError, "port_base"),
    ({"port_base": "8888"}, {}, ClusterConfigTypeError, "port_base"),
    ({"gpus_per_node": -1}, {}, ClusterConfigError, "gpus_per_node"),
    ({"gpus_per_task": 1.5}, {}, ClusterConfigTypeError, "gpus_per_task"),
    ({"jobs": ["worker"]}, {}, ClusterConfigTypeError, "jobs"),
    ({"jobs": {}}, {}, ClusterConfigTypeError, "jobs"),
    ({"jobs": {"worker": -1}}, {}, ClusterConfigError, "jobs['worker']"),
    ({"tasks_per_node": 0}, {}, ClusterConfigError, "tasks_per_node"),
    ({"tasks_per_node": "2"}, {}, ClusterConfigTypeError, "tasks_per_node"),
    ({"tasks_per_node": {"": 1}}, {}, ClusterConfigTypeError, "tasks_per_node"),
    ({"tasks_per_node": {"bad host": 4}}, {}, ClusterConfigError,
     "tasks_per_node: expected host"),
    ({}, {"SLURM_STEP_NODELIST": "a b,c"}, ClusterConfigError,
     "SLURM_STEP_NODELIST: expected host"),
    ({"auto_set_gpu": "yes"}, {}, ClusterConfigTypeError, "auto_set_gpu"),
    ({"rpc_layer": "grpcc"}, {}, ClusterConfigError, "rpc_layer"),
])
def test_errors_name_the_field(kwargs, env, error, text):
    arguments = {"gpus_per_node": 0, **kwargs}
    with pytest.raises(error) as info:
        SlurmClusterResolver(environ={**slurm_env(), **env}, **arguments)
    assert text in str(info.value)


def test_auto_set_gpu_needs_a_mutable_environ():
    from types import MappingProxyType

    with pytest.raises(ClusterConfigTypeError, match="mutable"):
        SlurmClusterResolver(environ=MappingProxyType(slurm_env()), gpus_per_node=0)
    r = SlurmClusterResolver(environ=MappingProxyType(slurm_env()), gpus_per_node=0,
                             auto_set_gpu=False)
    assert r.task_id == 0


def test_task_setters_survive_cluster_spec():
    r = SlurmClusterResolver(environ=slurm_env(rank=1), gpus_per_node=0)
    r.task_id = 3
    r.cluster_spec()
    assert r.task_id == 3
    assert r.master() == "grpc://n2:8889"
