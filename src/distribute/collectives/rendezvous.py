"""The rendezvous of a multi-worker job: who hosts it, how tasks meet, and the deadline.

The training group is the ``chief`` task (if any) followed by the ``worker`` tasks; a task's
rank is its position (``cluster_resolver.id_in_cluster``). Rank 0 hosts the rendezvous: an
authenticated store (``authstore_server.py``) that listens on rank 0's own address from the
cluster spec, never on every interface, and serves only connections that prove the job
secret (``auth.py``; ``torch.distributed.TCPStore`` lets anyone read and write its keys).
Every task then *joins*: it records its task name, process id and view of the cluster in the
store, and waits until all ranks have joined.

Everything has one deadline. An unreachable host, a listener that accepts and never answers
(or answers garbage, or is frozen), a port already in use, a task that never arrives, two
processes claiming one task, or tasks that disagree about the cluster raise an error naming
the tasks and the address within that deadline. A store host that knows a different secret
fails at once (``UnauthenticatedError``).
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
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch.distributed as dist

from distribute.cluster_resolver import ClusterConfigError, ClusterSpec, parse_address
from distribute.cluster_resolver.job_secret import SECRET_VARIABLE
from distribute.collectives.auth import HandshakeError
from distribute.collectives.authstore import AuthStore, StoreTimeoutError, StoreUnreachableError, connect_store
from distribute.collectives.authstore_server import StoreServer
from distribute.collectives.failures import PortInUseError, RendezvousTimeoutError
from distribute.errors import AlreadyExistsError, UnauthenticatedError, UnavailableError

__all__ = ["Layout", "join", "make_layout", "open_client", "open_store"]

_POLL = 0.05
_MISMATCH_GRACE = 2.0
_PREFIX = "distribute/"


@dataclass(frozen=True)
class Layout:
    """The training group as seen by one task: every task by rank, and this task's rank."""

    tasks: Tuple[str, ...]
    addresses: Tuple[str, ...]
    rank: int
    digest: str
    summary: str
    jobs: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    """Every job of the cluster with its addresses (shown when two tasks disagree)."""

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
    jobs = tuple((job, tuple(str(a) for a in spec.job_tasks(job))) for job in sorted(spec.jobs))
    return Layout(tuple(f"{j}:{i}" for j, i in members), tuple(spec.task_address(j, i) for j, i in members),
                  members.index((task_type, task_id)), digest, summary, jobs)


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


def open_store(layout: Layout, deadline: float, timeout: float,
               secret: Optional[bytes]) -> Tuple[AuthStore, Optional[StoreServer]]:
    """Hosts (rank 0) and connects to the rendezvous store before ``deadline``.

    Returns:
        This task's client and, on rank 0, the server it now runs (close it when leaving).

    Raises:
        PortInUseError, UnavailableError: rank 0 cannot listen on its address.
        RendezvousTimeoutError: no authenticated connection before ``deadline``.
        UnauthenticatedError: the store's host knows a different job secret.
    """
    server = None
    if layout.rank == 0:
        server = StoreServer(_listen(layout), secret, layout.task)
    try:
        return open_client(layout, deadline, timeout, secret), server
    except BaseException:
        if server is not None:
            server.close()
        raise


def open_client(layout: Layout, deadline: float, timeout: float, secret: Optional[bytes]) -> AuthStore:
    """One more authenticated client of the rendezvous store (errors as :func:`open_store`)."""
    address = parse_address(layout.rendezvous)
    store_timeout = datetime.timedelta(seconds=max(1.0, deadline - time.monotonic()))
    try:
        return connect_store(address.host, address.port, secret, deadline, timeout=store_timeout)
    except HandshakeError as exc:
        raise UnauthenticatedError(
            f"{layout.task} cannot join the rendezvous of {layout.tasks[0]} at {layout.rendezvous}: {exc} Give "
            f"every task the same {SECRET_VARIABLE}.") from exc
    except StoreUnreachableError as exc:
        raise _unreachable(layout, exc, timeout) from exc


def _unreachable(layout: Layout, exc: StoreUnreachableError, timeout: float) -> RendezvousTimeoutError:
    if not exc.reached:
        return RendezvousTimeoutError(
            f"{layout.task} could not reach the rendezvous host {layout.tasks[0]} at {layout.rendezvous} within "
            f"{timeout:g} s (last error: {exc.last}). Joined: none that this task could see (the host is "
            f"unreachable); missing: {', '.join(layout.tasks)}. Start {layout.tasks[0]}, check its address, or "
            "raise CommunicationOptions(timeout_seconds=...).", task=layout.task, joined=(),
            missing=layout.tasks, address=layout.rendezvous)
    return RendezvousTimeoutError(
        f"{layout.task} reached {layout.rendezvous} but the rendezvous store of {layout.tasks[0]} did not "
        f"answer within {timeout:g} s (last error: {exc.last}). The process listening there is stopped, "
        f"overloaded or not a distribute task. Check {layout.tasks[0]} and its address, or raise "
        "CommunicationOptions(timeout_seconds=...).", task=layout.task, joined=(), missing=layout.tasks,
        address=layout.rendezvous)


def _key(name: str) -> str:
    return _PREFIX + name


def join_record(layout: Layout, extra: Dict[str, object]) -> str:
    """This task's join record (JSON)."""
    record = {"task": layout.task, "pid": os.getpid(), "host": socket.gethostname(),
              "cluster": layout.digest, "summary": layout.summary,
              "jobs": {job: list(addresses) for job, addresses in layout.jobs},
              "nonce": os.urandom(8).hex()}
    record.update(extra)
    return json.dumps(record, sort_keys=True)


def join(store: dist.Store, layout: Layout, deadline: float, timeout: float, extra: Dict[str, object],
         refusals: Optional[Callable[[], List[str]]] = None) -> List[dict]:
    """Records this task in the store and waits until every rank has; returns their records.

    ``refusals`` (rank 0) lists the addresses its store refused, for the timeout's message.

    Raises:
        AlreadyExistsError: another process already joined as this task.
        ClusterConfigError: a task sees a different cluster than this one (every task that
            joined raises it: rank 0 waits up to 2 s for the others to see it before leaving).
        RendezvousTimeoutError: not every task joined before ``deadline``.
    """
    mine = join_record(layout, extra)
    current = store.compare_set(_key(f"join/{layout.rank}"), "", mine).decode()
    if current != mine:
        other = json.loads(current)
        raise AlreadyExistsError(
            f"Another process (pid {other.get('pid')} on {other.get('host')}) already joined the rendezvous "
            f"at {layout.rendezvous} as {layout.task}. Give every process its own task in TF_CONFIG.")
    try:
        return _await_all(store, layout, deadline, timeout, refusals)
    except (ConnectionError, StoreTimeoutError) as exc:  # the host left (its deadline passed, or it failed)
        raise RendezvousTimeoutError(
            f"{layout.task} lost the rendezvous store of {layout.tasks[0]} at {layout.rendezvous} while waiting "
            f"for the other tasks ({exc}): {layout.tasks[0]} timed out, failed or was stopped; its own error says "
            "which tasks were missing.", task=layout.task, missing=layout.tasks,
            address=layout.rendezvous) from exc


def _await_all(store: dist.Store, layout: Layout, deadline: float, timeout: float,
               refusals: Optional[Callable[[], List[str]]]) -> List[dict]:
    keys = [_key(f"join/{r}") for r in range(layout.world_size)]
    next_scan = 0.0
    while not store.check(keys):
        now = time.monotonic()
        if now >= next_scan:
            _check_clusters(store, layout, _joined(store, layout))
            next_scan = now + 0.5
        if now >= deadline:
            raise _missing_error(layout, _joined(store, layout), timeout, refusals() if refusals else [])
        time.sleep(_POLL)
    records = [json.loads(v) for v in store.multi_get(keys)]
    _check_clusters(store, layout, dict(enumerate(records)))
    return records


def _joined(store: dist.Store, layout: Layout) -> Dict[int, dict]:
    found = {}
    for rank in range(layout.world_size):
        key = _key(f"join/{rank}")
        if store.check([key]):
            found[rank] = json.loads(store.get(key))
    return found


def _check_clusters(store: dist.Store, layout: Layout, records: Dict[int, dict]) -> None:
    differ = {r: rec for r, rec in records.items() if rec.get("cluster") != layout.digest}
    if not differ:
        return
    store.set(_key(f"cluster_mismatch/{layout.rank}"), "1")
    if layout.rank == 0:  # the store goes with this process: let the others read and raise first
        others = [_key(f"cluster_mismatch/{r}") for r in records if r != 0]
        until = time.monotonic() + _MISMATCH_GRACE
        while others and not store.check(others) and time.monotonic() < until:
            time.sleep(_POLL)
    mine: Dict[str, Any] = {job: list(addresses) for job, addresses in layout.jobs}
    theirs: Dict[int, Dict[str, Any]] = {r: rec["jobs"] if isinstance(rec.get("jobs"), dict) else {}
                                         for r, rec in differ.items()}
    sides = "; ".join(f"{layout.tasks[r]} (pid {differ[r].get('pid')}) sees {_differing(jobs, [mine])}"
                      for r, jobs in sorted(theirs.items()))
    raise ClusterConfigError(
        f"The tasks disagree about the cluster: {layout.task} sees {_differing(mine, list(theirs.values()))} but "
        f"{sides}. Give every task the same cluster in its TF_CONFIG; only `task` may differ.",
        field="cluster", value=layout.digest)


def _differing(jobs: Dict[str, Any], others: List[Dict[str, Any]]) -> str:
    """``'worker: [a, b]'``: the jobs of ``jobs`` whose addresses differ in some of ``others``."""
    names = sorted(set(jobs).union(*others))
    shown = [job for job in names if any(view.get(job) != jobs.get(job) for view in others)] or names
    return "; ".join(f"{job}: [{', '.join(map(str, jobs[job]))}]" if isinstance(jobs.get(job), (list, tuple))
                     else f"{job}: (none)" for job in shown)


def _missing_error(layout: Layout, joined: Dict[int, dict], timeout: float,
                   refusals: List[str]) -> RendezvousTimeoutError:
    present = [layout.tasks[r] for r in sorted(joined)]
    missing = [t for r, t in enumerate(layout.tasks) if r not in joined]
    refused = (f" The store refused {len(refusals)} connection(s) that did not prove the job secret (last from "
               f"{refusals[-1]}): a task given a different {SECRET_VARIABLE} cannot join.") if refusals else ""
    return RendezvousTimeoutError(
        f"Rendezvous at {layout.rendezvous} timed out after {timeout:g} s on {layout.task}: "
        f"{len(present)}/{layout.world_size} tasks joined ({', '.join(present)}); missing: {', '.join(missing)}."
        f"{refused} Start the missing tasks with the same cluster spec, or raise "
        "CommunicationOptions(timeout_seconds=...).", task=layout.task, joined=present, missing=missing,
        address=layout.rendezvous)
