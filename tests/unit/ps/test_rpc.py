"""Authenticated gRPC calls: the handshake, sessions, typed errors, unreachable tasks."""

from __future__ import annotations

import logging

import pytest
import torch

from distribute.errors import NotFoundError, UnauthenticatedError, UnavailableError
from distribute.ps import rpc, wire
from distribute.ps.ps_service import ParameterStore
from ps_cluster import free_ports

SECRET = b"s" * 40


@pytest.fixture
def server():
    store = ParameterStore("ps:0")
    made = rpc.RpcServer("127.0.0.1:0", SECRET, store.handlers(), "ps:0")
    made.start()
    try:
        yield made, store
    finally:
        made.stop(0)


def test_a_client_with_the_secret_calls(server):
    made, store = server
    client = rpc.RpcClient(f"127.0.0.1:{made.port}", SECRET, "ps:0")
    client.call("Create", {"id": 1, "name": "v", "trainable": True}, [torch.ones(2)])
    assert client.call("Read", {"ids": [1]})[1][0].tolist() == [1.0, 1.0]
    assert client.call_async("Assign", {"id": 1, "op": "add"}, [torch.ones(2)])()[1][0].tolist() == [2.0, 2.0]
    client.close()


def test_a_wrong_secret_is_refused_and_logged(server, caplog):
    made, store = server
    store._create({"id": 1, "name": "v", "trainable": True}, [torch.ones(2)])
    client = rpc.RpcClient(f"127.0.0.1:{made.port}", b"x" * 40, "ps:0")
    with caplog.at_level(logging.WARNING, logger="distribute.ps"), pytest.raises(UnauthenticatedError,
                                                                                  match="DISTRIBUTE_JOB_SECRET"):
        client.call("Assign", {"id": 1, "op": "assign"}, [torch.zeros(2)])
    assert "refused a call" in caplog.text and "does not know the job secret" in caplog.text
    assert store._vars[1].tensor.tolist() == [1.0, 1.0]
    client.close()


def test_a_call_without_a_session_is_refused(server):
    grpc = rpc.grpc_module()
    made, store = server
    store._create({"id": 1, "name": "v", "trainable": True}, [torch.ones(2)])
    channel = grpc.insecure_channel(f"127.0.0.1:{made.port}")
    call = channel.unary_unary(f"/{rpc.SERVICE}/Read")
    for metadata in ((), ((rpc.SESSION_KEY + "-bin", b"forged" * 6),)):
        with pytest.raises(grpc.RpcError) as info:
            call(wire.encode({"ids": [1]}), metadata=metadata, timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()


def test_a_replayed_proof_is_refused(server):
    grpc = rpc.grpc_module()
    made, _ = server
    channel = grpc.insecure_channel(f"127.0.0.1:{made.port}")
    hello = channel.unary_unary(f"/{rpc.SERVICE}/Hello")(rpc.MAGIC, timeout=5)
    theirs, mine = hello[len(rpc.MAGIC):], b"m" * 32
    request = rpc.MAGIC + theirs + mine + rpc.proof(SECRET, b"client", rpc.PURPOSE, theirs, mine)
    prove = channel.unary_unary(f"/{rpc.SERVICE}/Prove")
    assert len(prove(request, timeout=5)) == 64
    with pytest.raises(grpc.RpcError) as info:  # the server's nonce is used up
        prove(request, timeout=5)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()


def test_handler_errors_come_back_typed(server):
    made, _ = server
    client = rpc.RpcClient(f"127.0.0.1:{made.port}", SECRET, "ps:0")
    with pytest.raises(NotFoundError, match="ps:0 holds no variable 9"):
        client.call("Read", {"ids": [9]})
    client.close()


def test_an_unreachable_task_is_unavailable_and_named():
    (port,) = free_ports(1)
    client = rpc.RpcClient(f"127.0.0.1:{port}", SECRET, "ps:3")
    with pytest.raises(UnavailableError, match="ps:3"):
        client.call("Read", {"ids": [1]}, timeout=1.0)
    client.close()


def test_a_server_on_a_taken_port_says_so(server):
    made, _ = server
    with pytest.raises(UnavailableError, match="cannot listen"):
        rpc.RpcServer(f"127.0.0.1:{made.port}", SECRET, {}, "ps:1")
