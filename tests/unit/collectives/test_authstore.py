"""The authenticated rendezvous store, in this process: handshake, framing, TCPStore semantics, threads."""

from __future__ import annotations

import datetime
import logging
import socket
import struct
import threading
import time
from typing import Iterator, List

import pytest
import torch
import torch.distributed as dist

from distribute.collectives.auth import HandshakeError, client_handshake
from distribute.collectives.authstore import AuthStore, StoreTimeoutError, StoreUnreachableError, connect_store
from distribute.collectives.authstore_server import MAX_FRAME, OPS, PURPOSE, StoreServer, pack_frame
from distribute.collectives.torch_private import gloo_options
from distribute.errors import DeadlineExceededError

from ._secret_job import fake_listener

SECRET = b"s" * 64


def _listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@pytest.fixture
def server() -> Iterator[StoreServer]:
    srv = StoreServer(_listener(), SECRET, "worker:0", handshake_timeout=1.0, max_unauthenticated=4)
    yield srv
    srv.close()


def _port(srv: StoreServer) -> int:
    return int(srv.address.rsplit(":", 1)[1])


def _client(srv: StoreServer, secret: bytes = SECRET, within: float = 5.0) -> AuthStore:
    return connect_store("127.0.0.1", _port(srv), secret, time.monotonic() + within)


def _raw(srv: StoreServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", _port(srv)), timeout=5)


def _closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes ``sock`` (after its greeting, if any) within 5 s."""
    sock.settimeout(5)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return True


# -- semantics (those of TCPStore) ----------------------------------------------------------------
def test_set_get_add_compare_set_delete(server: StoreServer) -> None:
    store = _client(server)
    try:
        store.set("a", "text")
        store.set("b", b"\x00\xffbytes")
        assert store.get("a") == b"text" and store.get("b") == b"\x00\xffbytes"
        assert store.add("n", 2) == 2 and store.add("n", -5) == -3 and store.get("n") == b"-3"
        with pytest.raises(ValueError, match="not an integer"):
            store.add("a", 1)
        assert store.compare_set("c", "", "first") == b"first"  # missing + empty expected: set
        assert store.compare_set("d", "x", "y") == b"x" and not store.check(["d"])  # missing: not set
        assert store.compare_set("c", "wrong", "second") == b"first"
        assert store.compare_set("c", "first", "second") == b"second"
        assert store.check(["a", "b"]) and not store.check(["a", "nope"])
        store.multi_set(["m1", "m2"], ["v1", b"v2"])
        assert store.multi_get(["m1", "m2", "a"]) == [b"v1", b"v2", b"text"]
        assert store.num_keys() == 6
        assert store.delete_key("m1") and not store.delete_key("m1") and store.num_keys() == 5
    finally:
        store.close()


def test_get_and_wait_block_until_the_key_is_set(server: StoreServer) -> None:
    store, writer = _client(server), _client(server)
    timer = threading.Timer(0.3, lambda: writer.set("late", "here"))
    timer.start()
    try:
        started = time.monotonic()
        assert store.get("late") == b"here" and time.monotonic() - started >= 0.25
        writer.set("late2", "x")
        store.wait(["late", "late2"])
        assert store.multi_get(["late", "late2"]) == [b"here", b"x"]
    finally:
        timer.join()
        store.close()
        writer.close()


def test_timeouts_name_the_keys(server: StoreServer) -> None:
    store = _client(server)
    try:
        store.set_timeout(datetime.timedelta(seconds=0.3))
        assert store.timeout == datetime.timedelta(seconds=0.3)
        with pytest.raises(StoreTimeoutError, match="nope") as info:
            store.get("nope")
        assert isinstance(info.value, RuntimeError) and isinstance(info.value, DeadlineExceededError)
        started = time.monotonic()
        with pytest.raises(StoreTimeoutError, match="missing2"):
            store.wait(["missing2"], datetime.timedelta(seconds=0.2))
        assert time.monotonic() - started < 2.0
        with pytest.raises(StoreTimeoutError, match="missing3"):
            store.multi_get(["missing3"])
    finally:
        store.close()


def test_one_client_is_safe_from_many_threads(server: StoreServer) -> None:
    store = _client(server)
    errors: List[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(100):
                store.add("counter", 1)
                store.set(f"t{i}", str(j))
                assert store.get(f"t{i}") == str(j).encode()
        except BaseException as exc:  # noqa: BLE001 - collected for the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert not errors and store.get("counter") == b"800"
    finally:
        store.close()


def test_gloo_builds_its_group_over_the_store(server: StoreServer) -> None:
    sums = {}

    def rank(r: int) -> None:
        store = _client(server)
        try:
            group = dist.ProcessGroupGloo(dist.PrefixStore("g/", store), r, 2, gloo_options("127.0.0.1", 10))
            tensor = torch.full((3,), float(r + 1))
            group.allreduce([tensor]).wait()
            sums[r] = tensor.tolist()
            del group
        finally:
            store.close()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sums == {0: [3.0] * 3, 1: [3.0] * 3}


# -- who may connect ------------------------------------------------------------------------------
def test_a_wrong_secret_is_refused_at_once_and_logged(server: StoreServer, caplog: pytest.LogCaptureFixture) -> None:
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="distribute"):
        with pytest.raises(HandshakeError, match="DISTRIBUTE_JOB_SECRET") as info:
            _client(server, secret=b"w" * 64)
        deadline = time.monotonic() + 2
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.02)
    assert info.value.reason == "refused" and time.monotonic() - started < 3.0  # not the 5 s deadline
    assert "worker:0 refused a connection from 127.0.0.1:" in caplog.text
    assert "it does not know the job secret" in caplog.text and server.refusals
    store = _client(server)  # the real client still gets in
    store.set("k", "v")
    store.close()


def test_garbage_and_silent_connections_are_dropped(server: StoreServer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="distribute"):
        garbage = _raw(server)
        garbage.sendall(b"GET / HTTP/1.0\r\n\r\n" * 8)
        assert _closed_by_server(garbage)
        silent = [_raw(server) for _ in range(6)]  # more than the cap of 4
        started = time.monotonic()
        store = _client(server)  # admitted once the silent ones time out (1 s here)
        assert time.monotonic() - started < 4.0
        store.set("still", "works")
        store.close()
        for sock in silent:
            assert _closed_by_server(sock)
            sock.close()
        garbage.close()
    assert "it is not a distribute task" in caplog.text
    assert "it gave no proof of the job secret (it stayed silent or hung up)" in caplog.text


def _authenticated_raw(srv: StoreServer) -> socket.socket:
    sock = _raw(srv)
    client_handshake(sock, SECRET, PURPOSE, time.monotonic() + 5)
    return sock


@pytest.mark.parametrize("frame", [
    struct.pack(">I", MAX_FRAME + 1) + b"\x01",  # oversized
    struct.pack(">I", 0),  # empty
    pack_frame(99, [b"x"]),  # unknown op
    pack_frame(OPS["set"], [b"only a key"]),  # wrong number of fields
    struct.pack(">I", 6) + b"\x02" + struct.pack(">I", 100) + b"x",  # field past its frame
], ids=["oversized", "empty", "unknown-op", "arity", "field-overrun"])
def test_a_malformed_frame_closes_that_connection_only(server: StoreServer, frame: bytes) -> None:
    store = _client(server)
    bad = _authenticated_raw(server)
    try:
        bad.sendall(frame)
        assert _closed_by_server(bad)
        store.set("after", "ok")
        assert store.get("after") == b"ok"
    finally:
        bad.close()
        store.close()


def test_a_closed_server_fails_its_clients(server: StoreServer) -> None:
    store = _client(server)
    server.close()
    with pytest.raises(ConnectionError):
        store.set("k", "v")
    with pytest.raises(ConnectionError, match="closed"):
        store.get("k")


# -- what the client meets ------------------------------------------------------------------------
@pytest.mark.parametrize("answer", [b"", b"HTTP/1.1 400 Bad Request\r\n" * 4], ids=["mute", "garbage"])
def test_connect_store_is_bounded_by_its_deadline(answer: bytes) -> None:
    fake = fake_listener(answer)
    started = time.monotonic()
    try:
        with pytest.raises(StoreUnreachableError) as info:
            connect_store("127.0.0.1", fake.getsockname()[1], SECRET, time.monotonic() + 1.5, attempt=0.5)
    finally:
        fake.shutdown(socket.SHUT_RDWR)
        fake.close()
    assert time.monotonic() - started < 3.5
    assert info.value.reached and isinstance(info.value.last, HandshakeError)
    assert info.value.last.reason == ("no answer" if not answer else "not a distribute peer")


def test_connect_store_to_a_closed_port_is_not_reached() -> None:
    sock = _listener()
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(StoreUnreachableError) as info:
        connect_store("127.0.0.1", port, SECRET, time.monotonic() + 0.5)
    assert not info.value.reached and isinstance(info.value.last, ConnectionRefusedError)
