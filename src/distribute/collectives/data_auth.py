"""Every pair of tasks proves the job secret over its own gloo connection, before any tensor moves.

Gloo's sockets are paired through the rendezvous store (authenticated), but gloo itself does
not authenticate the TCP connections it accepts: a process that connects to a task's gloo
port at the right moment could take the place of a peer. So, once the group is built, each
task sends every peer a fresh 32-byte nonce over that pair and the peer answers with
``HMAC(secret, 'data' | answerer->challenger | nonce)`` over the same pair. A pair whose
answer is wrong fails the group with :class:`~distribute.errors.UnauthenticatedError` naming
the peer task; a peer that does not answer in time gives ``RendezvousTimeoutError``. Only
bytes are compared (``hmac.compare_digest``); the secret never crosses the wire.
"""

from __future__ import annotations

import datetime
import hmac
import os
from typing import Any, Dict, List, Optional, Sequence

import torch

from distribute.collectives.auth import NONCE_BYTES, proof
from distribute.errors import UnauthenticatedError

__all__ = ["CHALLENGE_TAG", "ANSWER_TAG", "verify_pairs"]

CHALLENGE_TAG = 0x5EC1
"""The gloo tag of the nonces (no user traffic exists yet when they cross)."""
ANSWER_TAG = 0x5EC2
"""The gloo tag of the answers."""
_DIGEST = 32


def _tag(secret: Optional[bytes], answerer: int, challenger: int, nonce: bytes) -> bytes:
    return proof(secret, b"data", f"{answerer}->{challenger}".encode(), nonce, b"")


def _exchange(gloo: Any, outgoing: Dict[int, bytes], size: int, tag: int, timeout: float) -> Dict[int, bytes]:
    """Sends ``outgoing[peer]`` to each peer and receives ``size`` bytes from each, over gloo."""
    limit = datetime.timedelta(seconds=timeout)
    sends = [gloo.send([torch.frombuffer(bytearray(data), dtype=torch.uint8)], peer, tag)
             for peer, data in outgoing.items()]
    inbox = {peer: torch.zeros(size, dtype=torch.uint8) for peer in outgoing}
    recvs = [gloo.recv([buf], peer, tag) for peer, buf in inbox.items()]
    for work in sends + recvs:
        work.wait(limit)
    return {peer: bytes(buf.numpy().tobytes()) for peer, buf in inbox.items()}


def verify_pairs(gloo: Any, rank: int, tasks: Sequence[str], secret: Optional[bytes], timeout: float) -> None:
    """Checks that every peer of ``rank`` answers this task's challenge over its gloo pair.

    Args:
        gloo: the group's gloo backend (``send``/``recv`` with tags).
        rank: this task's rank.
        tasks: task names by rank (for messages).
        secret: the job secret (None: the job runs unauthenticated; the check still runs
            with a public key, so it proves only that the peer is a distribute task).
        timeout: seconds each exchange may take.

    Raises:
        UnauthenticatedError: a peer answered with a wrong proof (it does not know the secret).
        RuntimeError: an exchange failed or timed out (gloo's error).
    """
    peers: List[int] = [peer for peer in range(len(tasks)) if peer != rank]
    if not peers:
        return
    mine = {peer: os.urandom(NONCE_BYTES) for peer in peers}
    theirs = _exchange(gloo, mine, NONCE_BYTES, CHALLENGE_TAG, timeout)
    answers = _exchange(gloo, {peer: _tag(secret, rank, peer, theirs[peer]) for peer in peers}, _DIGEST,
                        ANSWER_TAG, timeout)
    for peer in peers:
        if not hmac.compare_digest(answers[peer], _tag(secret, peer, rank, mine[peer])):
            raise UnauthenticatedError(
                f"{tasks[rank]} refused its collective connection to {tasks[peer]}: the process at the other end "
                "did not prove the job secret (it is not the real task, or it was given a different "
                "DISTRIBUTE_JOB_SECRET). No tensor was exchanged; give every task the same secret.")
