"""The rendezvous of a multi-worker job: who hosts it, how tasks meet, and the deadline.

The training group is the ``chief`` task (if any) followed by the ``worker`` tasks; a task's
rank is its position (``cluster_resolver.id_in_cluster``). Rank 0 hosts the rendezvous: a
``torch.distributed.TCPStore`` that listens on rank 0's own address from the cluster spec,
never on every interface (torch's store would listen on ``*:port``, so the socket is bound
here and handed over). Every task then *joins*: it records its task name, process id and
view of the cluster in the store, and waits until all ranks have joined.

Everything has one deadline. An unreachable host, a port already in use, a task that never
arrives, two processes claiming one task, or tasks that disagree about the cluster raise an
error naming the tasks and the address within that deadline.
"""

from __future__ import annotations

import datetime
import errno
import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch.distributed as dist

from distribute.cluster_resolver import ClusterConfigError, ClusterSpec, parse_address
from distribute.collectives.failures import PortInUseError, RendezvousTimeoutError
from distribute.errors import AlreadyExistsError, UnavailableError

__all__ = ["Layout", "join", "make_layout", "open_store"]

_POLL = 0.05
_PREFIX = "distribute/"


@dataclass(frozen=True)
class Layout:
    """The training group as seen by one task: every task by rank, and this task's rank."""

    tasks: Tuple[str, ...]
    addresses: Tuple[str, ...]
    rank: int
    digest: str
    summary: str

    @property
    def world_size(self) -> int:
        """The number of tasks in the group."""
        return len(self.tasks)

    @property
    def task(self) -> str:
        """This task's name, e.g. ``'worker:1'``."""
        return self.tasks[self.rank]

    @property
    def host(self) -> str:
        """This task's host from the cluster spec (what its listeners bind to)."""
        return parse_address(self.addresses[self.rank]).host

    @property
    def rendezvous(self) -> str:
        """The rendezvous address (rank 0's address)."""
        return self.addresses[0]


def make_layout(spec: ClusterSpec, task_type: str, task_id: int) -> Layout:
    """The group of the chief and worker tasks of ``spec``, seen by ``task_type:task_id``.

    Raises:
        ClusterConfigError: the task is not a chief or a worker of ``spec``.
    """
    members: List[Tuple[str, int]] = [(job, index) for job in ("chief", "worker") if job in spec.jobs
                                      for index in spec.task_indices(job)]
    if (task_type, task_id) not in members:
        raise ClusterConfigError(
            f"Task {task_type}:{task_id} is not a member of the training group {[f'{j}:{i}' for j, i in members]} "
            "(only 'chief' and 'worker' tasks train with MultiWorkerMirroredStrategy).",
            field="task", value=f"{task_type}:{task_id}")
    everything = sorted(spec.tasks())
    digest = hashlib.sha256(json.dumps(everything).encode()).hexdigest()[:16]
    summary = ", ".join(f"{job}: {spec.num_tasks(job)}" for job in sorted(spec.jobs))
    return Layout(tuple(f"{j}:{i}" for j, i in members), tuple(spec.task_address(j, i) for j, i in members),
                  members.index((task_type, task_id)), digest, summary)


def _listen(layout: Layout) -> socket.socket:
    address = parse_address(layout.rendezvous)
    try:
        family, kind, proto, _, sockaddr = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise UnavailableError(f"{layout.task} cannot host the rendezvous at {layout.rendezvous}: the host name "
                               f"does not resolve ({exc}). Fix this task's address in the cluster spec.") from exc
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(sockaddr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise _bind_error(layout, exc) from exc
    return sock


def _bind_error(layout: Layout, exc: OSError) -> Exception:
    if exc.errno == errno.EADDRINUSE:
        return PortInUseError(
            f"{layout.task} cannot host the rendezvous at {layout.rendezvous}: the port is already in use "
            "(another job, or a previous run that is still alive). Stop that process or give this task a "
            "free port in the cluster spec.", task=layout.task, address=layout.rendezvous)
    return UnavailableError(
        f"{layout.task} cannot listen on {layout.rendezvous} ({exc.strerror or exc}): the host must be an "
        "address of this machine. Fix this task's address in the cluster spec.")


def _wait_reachable(layout: Layout, deadline: float, timeout: float) -> None:
    address = parse_address(layout.rendezvous)
    last: Optional[OSError] = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            socket.create_connection((address.host, address.port), timeout=min(1.0, remaining)).close()
            return
        except OSError as exc:
            last = exc
            time.sleep(min(_POLL * 2, max(0.0, deadline - time.monotonic())))
    raise RendezvousTimeoutError(
        f"{layout.task} could not reach the rendezvous host {layout.tasks[0]} at {layout.rendezvous} within "
        f"{timeout:g} s (last error: {last}). Joined: none that this task could see (the host is "
        f"unreachable); missing: {', '.join(layout.tasks)}. Start {layout.tasks[0]}, check its address, or "
        "raise CommunicationOptions(timeout_seconds=...).", task=layout.task, joined=(),
        missing=layout.tasks, address=layout.rendezvous)


def open_store(layout: Layout, deadline: float, timeout: float) -> dist.TCPStore:
    """Hosts (rank 0) or connects to (other ranks) the rendezvous store before ``deadline``."""
    address = parse_address(layout.rendezvous)
    remaining = datetime.timedelta(seconds=max(0.1, deadline - time.monotonic()))
    if layout.rank == 0:
        sock = _listen(layout)
        try:
            store = dist.TCPStore(address.host, address.port, None, True, remaining, wait_for_workers=False,
                                  master_listen_fd=sock.fileno())
        except BaseException:
            sock.close()
            raise
        sock.detach()  # the store owns the listening socket now and closes it when it goes
        return store
    _wait_reachable(layout, deadline, timeout)
    try:
        store = dist.TCPStore(address.host, address.port, None, False,
                              datetime.timedelta(seconds=max(0.1, deadline - time.monotonic())))
    except (RuntimeError, OSError) as exc:
        raise RendezvousTimeoutError(
            f"{layout.task} reached {layout.rendezvous} but could not open the rendezvous store of "
            f"{layout.tasks[0]} within {timeout:g} s: {exc}", task=layout.task, missing=layout.tasks,
            address=layout.rendezvous) from exc
    return store


def _key(name: str) -> str:
    return _PREFIX + name


def join_record(layout: Layout, extra: Dict[str, object]) -> str:
    """This task's join record (JSON)."""
    record = {"task": layout.task, "pid": os.getpid(), "host": socket.gethostname(),
              "cluster": layout.digest, "summary": layout.summary, "nonce": os.urandom(8).hex()}
    record.update(extra)
    return json.dumps(record, sort_keys=True)


def join(store: dist.TCPStore, layout: Layout, deadline: float, timeout: float,
         extra: Dict[str, object]) -> List[dict]:
    """Records this task in the store and waits until every rank has; returns their records.

    Raises:
        AlreadyExistsError: another process already joined as this task.
        ClusterConfigError: a task sees a different cluster than this one.
        RendezvousTimeoutError: not every task joined before ``deadline``.
    """
    mine = join_record(layout, extra)
    current = store.compare_set(_key(f"join/{layout.rank}"), "", mine).decode()
    if current != mine:
        other = json.loads(current)
        raise AlreadyExistsError(
            f"Another process (pid {other.get('pid')} on {other.get('host')}) already joined the rendezvous "
            f"at {layout.rendezvous} as {layout.task}. Give every process its own task in TF_CONFIG.")
    keys = [_key(f"join/{r}") for r in range(layout.world_size)]
    next_scan = 0.0
    while not store.check(keys):
        now = time.monotonic()
        if now >= next_scan:
            _check_clusters(layout, _joined(store, layout))
            next_scan = now + 0.5
        if now >= deadline:
            raise _missing_error(layout, _joined(store, layout), timeout)
        time.sleep(_POLL)
    records = [json.loads(v) for v in store.multi_get(keys)]
    _check_clusters(layout, dict(enumerate(records)))
    return records


def _joined(store: dist.TCPStore, layout: Layout) -> Dict[int, dict]:
    found = {}
    for rank in range(layout.world_size):
        key = _key(f"join/{rank}")
        if store.check([key]):
            found[rank] = json.loads(store.get(key))
    return found


def _check_clusters(layout: Layout, records: Dict[int, dict]) -> None:
    differ = {r: rec for r, rec in records.items() if rec.get("cluster") != layout.digest}
    if differ:
        others = "; ".join(f"{layout.tasks[r]} (pid {rec.get('pid')}) sees {{{rec.get('summary')}}}"
                           for r, rec in sorted(differ.items()))
        raise ClusterConfigError(
            f"The tasks disagree about the cluster: {layout.task} sees {{{layout.summary}}} (digest "
            f"{layout.digest}) but {others} (a different digest). Give every task the same cluster in its "
            "TF_CONFIG; only `task` may differ.", field="cluster", value=layout.digest)


def _missing_error(layout: Layout, joined: Dict[int, dict], timeout: float) -> RendezvousTimeoutError:
    present = [layout.tasks[r] for r in sorted(joined)]
    missing = [t for r, t in enumerate(layout.tasks) if r not in joined]
    return RendezvousTimeoutError(
        f"Rendezvous at {layout.rendezvous} timed out after {timeout:g} s on {layout.task}: "
        f"{len(present)}/{layout.world_size} tasks joined ({', '.join(present)}); missing: {', '.join(missing)}. "
        "Start the missing tasks with the same cluster spec, or raise "
        "CommunicationOptions(timeout_seconds=...).", task=layout.task, joined=present, missing=missing,
        address=layout.rendezvous)
