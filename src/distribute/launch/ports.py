"""Free ports for a local cluster: bind port 0, read the port the kernel chose, close.

There is a small, unavoidable race: a port is free when it is picked, but another program
may take it before the task that owns it binds it. The window is short (the launcher starts
every task right away) and the kernel hands out ephemeral ports in rotation, so a clash is
rare; when it happens the task fails with "address already in use", which the multi-worker
strategy reports with the task's name. Only the launcher picks ports; nothing else in
`distribute` chooses a port on its own.
"""

from __future__ import annotations

import contextlib
import socket
from typing import List

from distribute.errors import InvalidArgumentError

__all__ = ["free_ports"]


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _bind_any_port(host: str) -> socket.socket:
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
    except OSError as exc:
        sock.close()
        raise InvalidArgumentError(
            f"host: expected an address of this machine that a task can listen on; received "
            f"{host!r}, where binding a port failed ({exc.strerror or exc}). Use '127.0.0.1' "
            "for a local cluster.") from None
    return sock


def free_ports(host: str, count: int) -> List[int]:
    """Picks ``count`` distinct ports of ``host`` that are free right now.

    Every socket stays bound until all ports are picked, so the ports differ from each other;
    all are closed before this returns (see the module docstring for the race this leaves).

    Args:
        host: a local IPv4 or IPv6 address, e.g. ``'127.0.0.1'`` or ``'::1'``.
        count: how many ports, at least 1.

    Raises:
        InvalidArgumentError: ``host`` is not an address this machine can bind.

    Example:
        >>> first, second = free_ports("127.0.0.1", 2)
        >>> first != second and min(first, second) > 0
        True
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidArgumentError(
            f"count: expected an int >= 1; received {count!r}. Ask for one port per task.")
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(_bind_any_port(host)) for _ in range(count)]
        return [sock.getsockname()[1] for sock in sockets]
