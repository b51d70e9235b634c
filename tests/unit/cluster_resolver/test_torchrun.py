"""Tests of TorchrunClusterResolver."""

import pytest

from distribute.cluster_resolver import (
    ClusterConfigError,
    MissingEnvironmentError,
    TorchrunClusterResolver,
    id_in_cluster,
    is_chief,
    worker_count,
)


def torchrun_env(rank=1, world=2, local=None, addr="127.0.0.1", port="29500", **extra):
    env = {"RANK": str(rank), "WORLD_SIZE": str(world),
           "LOCAL_RANK": str(rank if local is None else local), "MASTER_ADDR": addr,
           "MASTER_PORT": port}
    env.update(extra)
    return env


def test_single_node():
    r = TorchrunClusterResolver(environ=torchrun_env(LOCAL_WORLD_SIZE="2", GROUP_RANK="0",
                                                     TORCHELASTIC_USE_AGENT_STORE="True",
                                                     TORCHELASTIC_RUN_ID="job7"))
    spec = r.cluster_spec()
    assert spec.as_dict() == {"worker": ["127.0.0.1:29500", "127.0.0.1:29501"]}
    assert (r.task_type, r.task_id, r.rank, r.world_size, r.local_rank) == ("worker", 1, 1, 2, 1)
    assert (r.local_world_size, r.group_rank, r.run_id) == (2, 0, "job7")
    assert r.rendezvous_address == "127.0.0.1:29500"
    assert r.launcher_hosts_store and r.exact_addresses
    assert r.master() == "127.0.0.1:29501"
    assert id_in_cluster(spec, r.task_type, r.task_id) == 1
    assert worker_count(spec, r.task_type) == 2
    assert not is_chief(spec, r.task_type, r.task_id)


def test_rpc_layer_and_master():
    r = TorchrunClusterResolver(rpc_layer="tcp", environ=torchrun_env(rank=0))
    assert r.master() == "tcp://127.0.0.1:29500"
    assert r.master("worker", 1) == "tcp://127.0.0.1:29501"
    assert r.master(rpc_layer="grpc") == "grpc://127.0.0.1:29500"


def test_world_of_one_master_is_empty():
    r = TorchrunClusterResolver(environ=torchrun_env(rank=0, world=1))
    assert r.master() == "" and r.exact_addresses


def test_multi_node_addresses_are_not_exact():
    r = TorchrunClusterResolver(environ=torchrun_env(rank=3, world=4, local=1,
                                                     LOCAL_WORLD_SIZE="2", GROUP_RANK="1"))
    assert not r.exact_addresses
    assert r.cluster_spec().num_tasks("worker") == 4
    assert not TorchrunClusterResolver(environ=torchrun_env()).launcher_hosts_store


def test_ipv6_master_addr():
    for addr in ("::1", "[::1]"):
        r = TorchrunClusterResolver(environ=torchrun_env(addr=addr))
        assert r.rendezvous_address == "[::1]:29500"


@pytest.mark.parametrize("missing", ["RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                     "MASTER_PORT"])
def test_missing_variable(missing):
    env = torchrun_env()
    del env[missing]
    with pytest.raises(MissingEnvironmentError, match=f"{missing} not found in environment"):
        TorchrunClusterResolver(environ=env)


@pytest.mark.parametrize("change, field", [
    ({"RANK": "2"}, "RANK"), ({"RANK": "-1"}, "RANK"), ({"RANK": "one"}, "RANK"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE"), ({"LOCAL_RANK": "5"}, "LOCAL_RANK"),
    ({"LOCAL_WORLD_SIZE": "3"}, "LOCAL_WORLD_SIZE"),
    ({"LOCAL_WORLD_SIZE": "1"}, "LOCAL_RANK"), ({"GROUP_RANK": "x"}, "GROUP_RANK"),
    ({"MASTER_ADDR": "bad host"}, "MASTER_ADDR"), ({"MASTER_ADDR": ""}, "MASTER_ADDR"),
    ({"MASTER_PORT": "0"}, "MASTER_PORT"), ({"MASTER_PORT": "http"}, "MASTER_PORT"),
    ({"MASTER_PORT": "65535"}, "MASTER_PORT: expected a port with room for 2 tasks"),
])
def test_bad_values_name_the_variable(change, field):
    with pytest.raises(ClusterConfigError) as info:
        TorchrunClusterResolver(environ={**torchrun_env(), **change})
    assert str(info.value).startswith(field)


def test_bad_rpc_layer():
    with pytest.raises(ClusterConfigError, match="rpc_layer"):
        TorchrunClusterResolver(rpc_layer="nope", environ=torchrun_env())
