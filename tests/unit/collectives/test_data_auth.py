"""Every gloo pair proves the job secret before a tensor moves (two gloo ranks in this process)."""

from __future__ import annotations

import threading
from typing import Dict, List, Optional

import torch.distributed as dist

from distribute.collectives.data_auth import verify_pairs
from distribute.collectives.torch_private import gloo_options
from distribute.errors import UnauthenticatedError

TASKS = ("worker:0", "worker:1")


def _pair(secrets: List[Optional[bytes]]) -> Dict[int, Optional[BaseException]]:
    store = dist.HashStore()
    outcome: Dict[int, Optional[BaseException]] = {}

    def rank(r: int) -> None:
        group = dist.ProcessGroupGloo(dist.PrefixStore("g/", store), r, 2, gloo_options("127.0.0.1", 10))
        try:
            verify_pairs(group, r, TASKS, secrets[r], 10.0)
            outcome[r] = None
        except BaseException as exc:  # noqa: BLE001 - collected for the test
            outcome[r] = exc

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcome


def test_peers_that_know_the_secret_pass() -> None:
    assert _pair([b"k" * 64, b"k" * 64]) == {0: None, 1: None}
    assert _pair([None, None]) == {0: None, 1: None}  # unauthenticated jobs: the public key


def test_a_peer_with_another_secret_is_named_on_both_sides() -> None:
    outcome = _pair([b"k" * 64, b"j" * 64])
    for me, peer in ((0, "worker:1"), (1, "worker:0")):
        error = outcome[me]
        assert isinstance(error, UnauthenticatedError), outcome
        assert f"{TASKS[me]} refused its collective connection to {peer}" in str(error)


def test_one_task_has_nothing_to_check() -> None:
    verify_pairs(None, 0, ("worker:0",), b"k" * 64, 1.0)
