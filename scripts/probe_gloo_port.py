"""What a process without the job secret can do to the gloo ports of a training job (docs: "Security").

Starts a 2-worker job on localhost (its own secret), finds each task's gloo listening port in
/proc, attacks it while the job trains, and prints how the job ended. One line per scenario::

    PYTHONPATH=src python scripts/probe_gloo_port.py silent     # 4 silent connections per port
    PYTHONPATH=src python scripts/probe_gloo_port.py garbage    # 4 connections of random bytes per port
    PYTHONPATH=src python scripts/probe_gloo_port.py exhaust    # worker:0's open-file limit lowered to 100,
                                                                # then 300 connections to its gloo port
    PYTHONPATH=src python scripts/probe_gloo_port.py hijack     # race gloo's connection setup (3 tries)

Expected (torch 2.13, Linux): once the job trains, gloo's ports are sealed
(``collectives/gloo_listener.py``), so every connection attempt of silent, garbage and exhaust
times out and training goes on with exact sums. (Before the seal existed, exhaust killed worker:0
with SIGABRT: gloo's "accept: Too many open files".) hijack races the start-up window, before the
seal: in some tries the job fails to start (the pair check: no tensor reaches the attacker), in
the others it runs normally.
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Dict, List, Set

WORKER = """
import sys, time, torch
from distribute.cluster_resolver import TFConfigClusterResolver
from distribute.collectives.connect import connect
r = TFConfigClusterResolver()
group = connect(r.cluster_spec(), r.task_type, r.task_id, rendezvous_timeout=15, collective_timeout=20)
sums = set()
for step in range(int(sys.argv[1])):
    sums.update(group.all_reduce([torch.full((2,), float(group.rank + 1))], note="step")[0].tolist())
    if step == 0:
        print("training", flush=True)
    time.sleep(0.05)
print("sums", sorted(sums), flush=True)
group.shutdown()
"""


def _free_ports(count: int) -> List[int]:
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _start(steps: int, ports: List[int]) -> List[subprocess.Popen]:
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    env = dict(os.environ, DISTRIBUTE_JOB_SECRET=secrets.token_hex(32), OMP_NUM_THREADS="1")
    return [subprocess.Popen([sys.executable, "-c", WORKER, str(steps)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             env=dict(env, TF_CONFIG=json.dumps({"cluster": cluster,
                                                                 "task": {"type": "worker", "index": i}})))
            for i in range(2)]


def _listening(pid: int) -> Set[int]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    with open(f"/proc/{pid}/net/tcp") as f:
        rows = [row.split() for row in f.read().splitlines()[1:]]
    return {int(r[1].rsplit(":", 1)[1], 16) for r in rows if r[3] == "0A" and r[9] in inodes}


def _gloo_ports(procs: List[subprocess.Popen], store: int) -> Dict[int, List[int]]:
    """Each task's listening ports except the store's (that is, its gloo listener), once it trains."""
    assert procs[1].stdout is not None
    line = procs[1].stdout.readline()
    if "training" not in line:
        raise SystemExit(f"the job did not start: {line}")
    return {i: sorted(_listening(p.pid) - {store}) for i, p in enumerate(procs)}


def _finish(procs: List[subprocess.Popen]) -> None:
    for i, proc in enumerate(procs):
        out, _ = proc.communicate(timeout=120)
        tail = [line for line in out.splitlines() if line.strip()][-2:]
        print(f"worker:{i} exit {proc.returncode}: {' | '.join(tail)[:400]}")


def attack(mode: str) -> None:
    """Runs one scenario (see the module docstring)."""
    cluster = _free_ports(2)
    procs = _start(100, cluster)
    held = []
    try:
        ports = _gloo_ports(procs, cluster[0])
        if mode == "exhaust":
            resource.prlimit(procs[0].pid, resource.RLIMIT_NOFILE, (100, 100))
        targets = [(i, p) for i, found in ports.items() for p in found if mode != "exhaust" or i == 0]
        for i, port in targets:
            for k in range(300 if mode == "exhaust" else 4):
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
                    sock.sendall(os.urandom(4096) if mode == "garbage" else
                                 struct.pack("<Q", 1000 + k) if mode == "exhaust" else b"")
                    held.append(sock)
                except OSError as exc:
                    print(f"connection {k} to worker:{i} port {port} failed: {exc}")
                    break
        print(f"{mode}: {len(held)} connections to the gloo ports {ports}")
        _finish(procs)
    finally:
        for sock in held:
            sock.close()
        for proc in procs:
            proc.kill()


def _ports_now() -> Set[int]:
    with open("/proc/net/tcp") as f:
        rows = [row.split() for row in f.read().splitlines()[1:]]
    return {int(r[1].split(":")[1], 16) for r in rows if r[3] == "0A" and r[1].startswith("0100007F")}


def _race(seen: Set[int], stop: threading.Event, held: List[socket.socket]) -> None:
    """Connects to every new listening port with sequence numbers 0-3, as fast as it can."""
    while not stop.is_set():
        for port in _ports_now() - seen:
            seen.add(port)
            for seq in range(4):
                try:
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=1))
                    held[-1].sendall(struct.pack("<Q", seq))
                except OSError:
                    pass
        time.sleep(0.0005)


def hijack() -> None:
    """Races gloo's connection setup in 3 fresh jobs."""
    for attempt in range(3):
        stop, held = threading.Event(), []  # type: ignore[var-annotated]
        thread = threading.Thread(target=_race, args=(_ports_now(), stop, held), daemon=True)
        thread.start()
        procs = _start(5, _free_ports(2))
        print(f"hijack try {attempt + 1}:")
        _finish(procs)
        stop.set()
        thread.join()
        for sock in held:
            sock.close()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("silent", "garbage", "exhaust", "hijack"):
        raise SystemExit(__doc__)
    hijack() if sys.argv[1] == "hijack" else attack(sys.argv[1])
