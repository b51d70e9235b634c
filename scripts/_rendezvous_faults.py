"""The rendezvous and security scenarios of ``scripts/faults.py``: hand-made jobs, no launcher.

Each scenario starts real processes on localhost with their own ``TF_CONFIG`` (so that it can
freeze a chief before anyone arrives, give two tasks different clusters, or put a process
without the job secret in a task's place) and returns an ``Outcome``: what the task under test
raised, and the seconds it took. A task process runs :func:`task_main` (``faults.py --task``):
it joins the group with ``connect``, sums ``rank + 1`` over the workers and prints one
``FAULTS outcome {...}`` line.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

SCRIPT = Path(__file__).resolve().parent / "faults.py"
SRC = Path(__file__).resolve().parents[1] / "src"
TIMEOUT = 3.0
"""The rendezvous timeout of the task under test (seconds)."""


def task_main(timeout: float, hold: float) -> None:
    """In a task process: join, sum ``rank + 1``, print the outcome, stay ``hold`` s, leave."""
    import torch

    from distribute.cluster_resolver import TFConfigClusterResolver
    from distribute.collectives.connect import connect

    resolver = TFConfigClusterResolver()
    started = time.monotonic()
    try:
        group = connect(resolver.cluster_spec(), resolver.task_type, resolver.task_id, rendezvous_timeout=timeout)
        (total,) = group.all_reduce([torch.tensor([float(group.rank + 1)])], note="faults")
        outcome = {"type": "ok", "message": f"sum {total.item():g}"}
        time.sleep(hold)
        group.shutdown()
    except Exception as exc:  # noqa: BLE001 - the outcome is the scenario's result
        outcome = {"type": type(exc).__name__, "message": str(exc)}
    outcome["elapsed"] = time.monotonic() - started
    print("FAULTS outcome " + json.dumps(outcome), flush=True)


def _ports(count: int) -> List[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _cluster() -> Dict[str, List[str]]:
    return {"worker": [f"127.0.0.1:{p}" for p in _ports(2)]}


def _start(spec: Dict[str, List[str]], index: int, secret: Optional[str], hold: float = 0.0,
           timeout: float = TIMEOUT) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DISTRIBUTE_JOB_SECRET"}
    if secret is not None:
        env["DISTRIBUTE_JOB_SECRET"] = secret
    env.update(TF_CONFIG=json.dumps({"cluster": spec, "task": {"type": "worker", "index": index}}),
               OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, str(SCRIPT), "--task", str(timeout), str(hold)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _outcome(proc: subprocess.Popen, limit: float = 60.0) -> Dict[str, Any]:
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    for line in out.splitlines():
        if line.startswith("FAULTS outcome "):
            return json.loads(line.split(" ", 2)[2])
    return {"type": "no outcome", "message": out[-300:], "elapsed": None}


def _listening(port: int, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {limit:g} s")


def _fake_chief(answer: bytes) -> Tuple[socket.socket, str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held: List[socket.socket] = []

    def loop() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            held.append(conn)
            if answer:
                conn.sendall(answer)

    threading.Thread(target=loop, daemon=True).start()
    return sock, f"127.0.0.1:{sock.getsockname()[1]}"


def _as_outcome(found: Dict[str, Any]) -> Tuple[str, Optional[float]]:
    return f"{found['type']}: {str(found['message'])[:120]}", found.get("elapsed")


def _fake_chief_scenario(answer: bytes, secret: str) -> Tuple[str, Optional[float]]:
    fake, address = _fake_chief(answer)
    spec = {"worker": [address, f"127.0.0.1:{_ports(1)[0]}"]}
    try:
        return _as_outcome(_outcome(_start(spec, 1, secret)))
    finally:
        fake.close()


def frozen_chief_at_rendezvous(secret: str) -> Tuple[str, Optional[float]]:
    """The chief listens, is frozen (SIGSTOP), then worker:1 arrives."""
    spec = _cluster()
    chief = _start(spec, 0, secret, timeout=60.0)
    try:
        _listening(int(spec["worker"][0].rsplit(":", 1)[1]))
        os.kill(chief.pid, signal.SIGSTOP)
        return _as_outcome(_outcome(_start(spec, 1, secret)))
    finally:
        os.kill(chief.pid, signal.SIGKILL)
        chief.wait()


def different_clusters(secret: str) -> Tuple[str, Optional[float]]:
    """worker:0 and worker:1 agree on the chief's address but not on worker:1's."""
    spec = _cluster()
    other = {"worker": [spec["worker"][0], f"127.0.0.1:{_ports(1)[0]}"]}
    procs = [_start(spec, 0, secret), _start(other, 1, secret)]
    found = [_outcome(p) for p in procs]
    both = "; ".join(f"worker:{i}: {f['type']}" for i, f in enumerate(found))
    return f"{both} | {str(found[1]['message'])[:120]}", max(f.get("elapsed") or 0.0 for f in found)


def rogue_worker(secret: str) -> Tuple[str, Optional[float]]:
    """A process with a wrong secret claims worker:1 first; the real worker:1 comes 1 s later."""
    spec = _cluster()
    chief = _start(spec, 0, secret, timeout=30.0)
    rogue = _start(spec, 1, "not-the-job-secret-" + "x" * 32, timeout=30.0)
    rogue_seen = _outcome(rogue)
    real = _start(spec, 1, secret, timeout=30.0)
    sums = [_outcome(chief), _outcome(real)]
    return (f"rogue: {rogue_seen['type']}: {str(rogue_seen['message'])[:80]} | real job: "
            + ", ".join(f"{s['type']} {s['message']}" for s in sums), rogue_seen.get("elapsed"))


_FORGER = """
import datetime, json, sys
import torch.distributed as dist
try:
    store = dist.TCPStore(sys.argv[1], int(sys.argv[2]), None, False, datetime.timedelta(seconds=2))
    store.set("distribute/error/1", json.dumps({"type": "ValueError", "message": "forged", "primary": True}))
    print("FORGER the forger wrote its report")
except Exception as exc:
    print(f"FORGER the forger failed: {type(exc).__name__}: {str(exc).splitlines()[0][:60]}")
"""


def forged_report(secret: str) -> Tuple[str, Optional[float]]:
    """A plain torch TCPStore client (its own process) tries to write a failure report into a running job."""
    spec = _cluster()
    procs = [_start(spec, i, secret, hold=3.0, timeout=30.0) for i in range(2)]
    host, port = spec["worker"][0].rsplit(":", 1)
    _listening(int(port))
    started = time.monotonic()
    forger = subprocess.run([sys.executable, "-c", _FORGER, host, port], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    lines = [line for line in forger.stdout.splitlines() if line.startswith("FORGER ")]
    forged = lines[0][len("FORGER "):] if lines else f"the forger printed nothing (exit status {forger.returncode})"
    job = ", ".join(f"{o['type']} {o['message'][:40]}" for o in (_outcome(p) for p in procs))
    return f"{forged} | job: {job}", elapsed


def scenarios(secret: Callable[[], str]) -> Dict[str, Callable[[], Tuple[str, Optional[float]]]]:
    """name -> scenario; ``secret()`` gives the job secret of the hand-made jobs."""
    return {
        "mute-listener": lambda: _fake_chief_scenario(b"", secret()),
        "garbage-server": lambda: _fake_chief_scenario(b"\x00\xff junk " * 64, secret()),
        "frozen-chief-at-rendezvous": lambda: frozen_chief_at_rendezvous(secret()),
        "different-clusters": lambda: different_clusters(secret()),
        "rogue-worker": lambda: rogue_worker(secret()),
        "forged-report": lambda: forged_report(secret()),
    }
