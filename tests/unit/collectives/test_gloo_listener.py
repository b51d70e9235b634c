"""Gloo's listener is sealed once the group is built: new connections time out, the group works on."""

from __future__ import annotations

import socket
import threading
from typing import Dict, List

import pytest
import torch
import torch.distributed as dist

from distribute.collectives import gloo_listener
from distribute.collectives.torch_private import gloo_options


def test_published_ports_match_a_sockaddr_only() -> None:
    value = b"\x00" * 8 + socket.AF_INET.to_bytes(2, "little") + (4242).to_bytes(2, "big") + b"\x7f\x00\x00\x01"
    assert gloo_listener.published_ports(value, [4242, 4243, 2]) == [4242]


def test_a_sealed_listener_drops_new_connections_and_the_pairs_keep_working() -> None:
    store = dist.HashStore()
    groups: Dict[int, object] = {}
    sealed: Dict[int, List[int]] = {}
    before = set(gloo_listener.listening_sockets())

    def build(rank: int) -> None:
        groups[rank] = dist.ProcessGroupGloo(dist.PrefixStore("distribute/gloo/", store), rank, 2,
                                             gloo_options("127.0.0.1", 10))

    threads = [threading.Thread(target=build, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    new = set(gloo_listener.listening_sockets()) - before
    assert len(new) == 2  # one listener per rank
    for rank in range(2):
        sealed[rank] = gloo_listener.seal(store, rank)
    assert sorted(sealed[0] + sealed[1]) == sorted(new) and len(sealed[0]) == 1  # each rank: its own only
    for port in new:
        with pytest.raises((TimeoutError, socket.timeout)):
            socket.create_connection(("127.0.0.1", port), timeout=0.5)
    sums = {}

    def reduce(rank: int) -> None:
        tensor = torch.full((3,), float(rank + 1))
        groups[rank].allreduce([tensor]).wait()  # type: ignore[attr-defined]
        sums[rank] = tensor.tolist()

    threads = [threading.Thread(target=reduce, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sums == {0: [3.0] * 3, 1: [3.0] * 3}


def test_nothing_is_sealed_without_a_published_address() -> None:
    assert gloo_listener.seal(dist.HashStore(), 0) == []
