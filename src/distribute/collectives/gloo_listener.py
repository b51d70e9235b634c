"""Sealing gloo's listening socket once the group is built: no new connection reaches it.

Gloo keeps a listening socket open for the life of a group, accepts every connection made to
it and keeps each one (waiting for its 8-byte sequence number, or filed under the number it
sent) until the group ends; when ``accept`` fails because the process ran out of file
descriptors, gloo aborts the process (``accept: Too many open files``). So any process that
can reach the port could crash the task. A full mesh needs no new connection once it is built
and its pairs are checked (``data_auth.py``), so :func:`seal` attaches to that listener a
socket filter that drops every packet (Linux ``SO_ATTACH_FILTER`` with a one-instruction
classic BPF program): a connection attempt then times out in the kernel and never reaches
gloo. The established pairs are sockets of their own and are not affected.

The listener is not guessed: it is a socket of this process in the LISTEN state whose port is
the one this rank published for its peers in the (authenticated) store. Where that cannot be
established (not Linux, a torch that stores gloo's addresses differently), nothing is sealed.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
from typing import Dict, List

import torch.distributed as dist

__all__ = ["listening_sockets", "published_ports", "seal"]

_SO_ATTACH_FILTER = 26  # <asm-generic/socket.h>
_BPF_RET_K = 0x06  # BPF_RET | BPF_K: return the constant (0: drop the packet)
_GLOO_KEY = "distribute/gloo//0/{rank}"  # connect.py's PrefixStore, then gloo's "/<context>/<rank>"


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Instruction))]


def listening_sockets() -> Dict[int, int]:
    """``{port: fd}`` of the TCP sockets of this process that listen (IPv4 and IPv6; Linux)."""
    by_inode: Dict[str, int] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            by_inode[target[8:-1]] = int(name)
    found: Dict[int, int] = {}
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/self/net/{table}") as f:
                rows = [row.split() for row in f.read().splitlines()[1:]]
        except OSError:
            continue
        for row in rows:
            if len(row) > 9 and row[3] == "0A" and row[9] in by_inode:  # 0A: LISTEN
                found[int(row[1].rsplit(":", 1)[1], 16)] = by_inode[row[9]]
    return found


def published_ports(value: bytes, ports: List[int]) -> List[int]:
    """The ``ports`` that appear as a ``sockaddr_in``/``sockaddr_in6`` (family, port) in ``value``."""
    families = (struct.pack("=H", socket.AF_INET), struct.pack("=H", socket.AF_INET6))
    return [port for port in ports if any(family + struct.pack(">H", port) in value for family in families)]


def _drop_everything(fd: int) -> None:
    instructions = (_Instruction * 1)(_Instruction(_BPF_RET_K, 0, 0, 0))
    program = _Program(1, instructions)
    sock = socket.socket(fileno=fd)  # borrowed: detached below, never closed here
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, bytes(program))
    finally:
        sock.detach()


def seal(store: dist.Store, rank: int) -> List[int]:
    """Makes gloo's listener of ``rank`` (in this process) drop every new connection.

    Args:
        store: the store the group was built over (it holds this rank's published address).
        rank: this task's rank.

    Returns:
        The ports sealed (none where the listener could not be identified).
    """
    key = _GLOO_KEY.format(rank=rank)
    try:
        if not store.check([key]):
            return []
        value = store.get(key)
        listeners = listening_sockets()
        ports = published_ports(value, sorted(listeners))
        for port in ports:
            _drop_everything(listeners[port])
    except OSError:  # not Linux, or the socket went away: nothing to seal
        return []
    return ports
