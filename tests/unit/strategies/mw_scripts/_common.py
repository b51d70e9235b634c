"""Helpers shared by the worker scripts that the multi-worker tests launch.

A script prints one ``RESULT <name> <json>`` line per check; the test parses every task's
output with :func:`parse_results` (imported from the test module) and compares them.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

import torch

torch.set_num_threads(1)


def emit(name: str, value: Any) -> None:
    """Prints one result line."""
    print(f"RESULT {name} {json.dumps(value)}", flush=True)


def as_list(value: Any) -> Any:
    """A tensor (or nested tensors) as plain Python values."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().tolist()
    if isinstance(value, (list, tuple)):
        return [as_list(v) for v in value]
    if isinstance(value, dict):
        return {k: as_list(v) for k, v in value.items()}
    return value


def _socket_inodes(pid: int) -> set:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _decode(address: str, v6: bool) -> str:
    host_hex, port_hex = address.split(":")
    raw = bytes.fromhex(host_hex)
    if v6:
        words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
        host = ":".join(b"".join(words)[i:i + 2].hex() for i in range(0, 16, 2))
    else:
        host = ".".join(str(b) for b in raw[::-1])
    return f"{host}:{int(port_hex, 16)}"


def listening_addresses(pid: int = 0) -> List[str]:
    """The local addresses of this process's listening TCP sockets (from /proc, no psutil)."""
    pid = pid or os.getpid()
    inodes = _socket_inodes(pid)
    found = []
    for table, v6 in (("tcp", False), ("tcp6", True)):
        try:
            lines = open(f"/proc/{pid}/net/{table}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                found.append(_decode(fields[1], v6))
    return found


def is_wildcard(address: str) -> bool:
    """True for 0.0.0.0:port and [::]:port style addresses."""
    host = address.rsplit(":", 1)[0]
    return host in ("0.0.0.0", "0000:0000:0000:0000:0000:0000:0000:0000")


def parse_results(output: str) -> Dict[str, Any]:
    """``{name: value}`` from the ``RESULT`` lines of one task's output."""
    results = {}
    for line in output.splitlines():
        if "RESULT " in line:
            name, payload = line.split("RESULT ", 1)[1].split(" ", 1)
            results[name] = json.loads(payload)
    return results


if __name__ == "__main__":  # pragma: no cover - a quick manual check
    print(listening_addresses(), file=sys.stderr)
