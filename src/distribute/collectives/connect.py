"""Joining the cluster: the one process group of each task, built once and shared.

:func:`connect` meets the other tasks (``rendezvous.py``), builds a gloo process group whose
sockets listen on this task's own address only (plus an NCCL group for CUDA tensors when asked),
starts the heartbeat (``health.py``) and returns the task's
:class:`~distribute.collectives.process_group.ProcessGroup`. Whether its 2-process fast paths
are on (``wire.py``) is the ``fast_paths`` argument, by default what the environment says
(``DISTRIBUTE_FAST_PATHS``, read by ``cluster_resolver.fast_paths.fast_paths_enabled``). A
second call for the same cluster and task returns the same group; :func:`shutdown_all` (also run
at exit) closes them all.

Example (in each of two processes with the same cluster and its own task)::

    group = connect(ClusterSpec({"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}), "worker", rank)
    total, = group.all_reduce([torch.ones(3)], note="example")   # tensor([2., 2., 2.])
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from distribute.cluster_resolver import ClusterSpec
from distribute.cluster_resolver.fast_paths import fast_paths_enabled
from distribute.cluster_resolver.job_secret import job_secret
from distribute.collectives import gloo_listener, health
from distribute.collectives.data_auth import verify_pairs
from distribute.collectives.failures import RendezvousTimeoutError
from distribute.collectives.link import Connection
from distribute.collectives.process_group import ProcessGroup
from distribute.collectives.rendezvous import Layout, join, make_layout, open_client, open_store
from distribute.collectives.torch_private import gloo_options, nccl_options
from distribute.collectives.wire import fast_path_set

__all__ = ["DEFAULT_COLLECTIVE_TIMEOUT", "DEFAULT_RENDEZVOUS_TIMEOUT", "connect", "shutdown_all"]

DEFAULT_RENDEZVOUS_TIMEOUT = 30.0
"""Seconds the tasks have to meet when ``CommunicationOptions.timeout_seconds`` is not set."""
DEFAULT_COLLECTIVE_TIMEOUT = 120.0
"""Seconds a collective may wait for its peers when ``timeout_seconds`` is not set."""
_GROUPS: Dict[Tuple[str, int, bool], ProcessGroup] = {}
_LOCK = threading.Lock()


def _gloo_group(store: dist.Store, layout: Layout, timeout: float) -> Any:
    """A gloo group whose sockets listen on this task's own address only."""
    return dist.ProcessGroupGloo(dist.PrefixStore("distribute/gloo/", store), layout.rank, layout.world_size,
                                 gloo_options(layout.host, timeout))


def _nccl_group(store: dist.Store, layout: Layout, timeout: float) -> Any:  # pragma: no cover - GPUs only
    return dist.ProcessGroupNCCL(dist.PrefixStore("distribute/nccl/", store), layout.rank, layout.world_size,
                                 nccl_options(timeout))


def connect(cluster_spec: ClusterSpec, task_type: str, task_id: int, *, rendezvous_timeout: Optional[float] = None,
            collective_timeout: Optional[float] = None, nccl: bool = False,
            fast_paths: Any = None) -> ProcessGroup:
    """Joins (or reuses) this task's process group with the chief and worker tasks of the cluster.

    Args:
        cluster_spec: the cluster; rank 0 (the chief, else the first worker) hosts the
            rendezvous at its own address.
        task_type: this task's job (``'chief'`` or ``'worker'``).
        task_id: this task's index in its job.
        rendezvous_timeout: seconds for all tasks to meet (default 30).
        collective_timeout: default seconds a collective waits for its peers (default 120).
        nccl: also build an NCCL group, used for CUDA tensors.
        fast_paths: True (the 2-process fast paths of ``wire.py`` on), False (every all-reduce
            on the general packed path, with the same results) or some of their names; None:
            ``DISTRIBUTE_FAST_PATHS`` (``cluster_resolver.fast_paths``). Every worker
            must use the same: workers that differ raise ``CollectiveMismatchError``. A group
            that already exists for this task keeps its own (see ``ProcessGroup.use_fast_paths``).

    Raises:
        PortInUseError: rank 0 cannot listen because its port is taken.
        RendezvousTimeoutError: not every task arrived in time (the message lists which did).
        ClusterConfigError: the tasks disagree about the cluster, or this task is not in it, or
            ``DISTRIBUTE_FAST_PATHS`` is not 0 or 1.
        AlreadyExistsError: another process already joined as this task.
    """
    if nccl and not (dist.is_nccl_available() and torch.cuda.is_available()):
        raise ValueError("nccl=True needs a CUDA build of torch with NCCL and a visible GPU; received a "
                         "machine without them. Use gloo (nccl=False).")
    enabled = fast_path_set(fast_paths_enabled() if fast_paths is None else fast_paths)
    layout = make_layout(cluster_spec, task_type, task_id)
    with _LOCK:
        group = _GROUPS.get((layout.digest, layout.rank, nccl))
    if group is None or group.closed:
        # Built outside the lock: a second claim of the same task fails in the rendezvous.
        group = _build(layout, rendezvous_timeout or DEFAULT_RENDEZVOUS_TIMEOUT,
                       collective_timeout or DEFAULT_COLLECTIVE_TIMEOUT, nccl, enabled)
        with _LOCK:
            _GROUPS[group.key] = group
    if group.world_size > 1:
        health.install_exit_hooks(lambda: list(_GROUPS.values()), shutdown_all)
    return group


def _build(layout: Layout, rendezvous_timeout: float, collective_timeout: float, nccl: bool,
           fast_paths: Any) -> ProcessGroup:
    deadline = time.monotonic() + rendezvous_timeout
    if layout.world_size == 1:  # no peer, no listener: an in-process store, and no secret needed
        store: dist.Store = dist.HashStore()
        return _assemble(layout, Connection(store=store, nccl_wanted=nccl, forget=_forget), store,
                         rendezvous_timeout, collective_timeout, nccl, fast_paths, deadline, None, store)
    secret = job_secret(task=layout.task)
    client, server = open_store(layout, deadline, rendezvous_timeout, secret)
    opened: List[Any] = [client] + ([server] if server is not None else [])
    connection = Connection(store=client, nccl_wanted=nccl, forget=lambda group: _close(group, opened))
    try:
        records = join(client, layout, deadline, rendezvous_timeout, health.process_identity(),
                       refusals=(lambda: server.refusals) if server is not None else None)
        client.set_timeout(datetime.timedelta(seconds=max(1.0, deadline - time.monotonic())))
        monitor_store = open_client(layout, max(deadline, time.monotonic() + 2.0), rendezvous_timeout, secret)
        opened.append(monitor_store)
        return _assemble(layout, connection, client, rendezvous_timeout, collective_timeout, nccl, fast_paths,
                         deadline, secret, monitor_store, records)
    except BaseException:
        _close(None, opened)
        raise


def _assemble(layout: Layout, connection: Connection, store: dist.Store, rendezvous_timeout: float,
              collective_timeout: float, nccl: bool, fast_paths: Any, deadline: float, secret: Optional[bytes],
              monitor_store: dist.Store, records: Optional[List[dict]] = None) -> ProcessGroup:
    """Builds the data backends over the joined store, checks every pair, starts the heartbeat."""
    if records is None:
        records = join(store, layout, deadline, rendezvous_timeout, health.process_identity())
    connection.gloo = _connect_data(lambda: _gloo_group(store, layout, collective_timeout), layout,
                                    rendezvous_timeout)
    _verify_pairs(connection.gloo, layout, secret, rendezvous_timeout)
    gloo_listener.seal(store, layout.rank)  # no new connection is needed: none may reach gloo
    if nccl:  # pragma: no cover - GPUs only
        connection.nccl = _connect_data(lambda: _nccl_group(store, layout, collective_timeout), layout,
                                        rendezvous_timeout)
    connection.monitor_store = monitor_store
    connection.board = health.Board(store, layout.tasks, layout.rank)
    status = health.LocalStatus()
    connection.monitor = health.Monitor(health.Board(monitor_store, layout.tasks, layout.rank), status,
                                        layout.rank)
    group = ProcessGroup(layout, connection, records, collective_timeout, status, fast_paths)
    connection.monitor.start()
    return group


def _verify_pairs(gloo: Any, layout: Layout, secret: Optional[bytes], timeout: float) -> None:
    try:
        verify_pairs(gloo, layout.rank, layout.tasks, secret, timeout)
    except RuntimeError as exc:
        raise RendezvousTimeoutError(
            f"{layout.task} connected its collective sockets but a peer did not answer its proof of the job "
            f"secret within {timeout:g} s: a task died meanwhile, or a process that does not know the secret "
            "took one of the collective connections while they were being set up (no tensor was exchanged). "
            f"Start the job again. Underlying error: {exc}", task=layout.task,
            joined=layout.tasks, address=layout.rendezvous) from exc


def _connect_data(make: Any, layout: Layout, timeout: float) -> Any:
    try:
        return make()
    except (RuntimeError, OSError) as exc:
        raise RendezvousTimeoutError(
            f"{layout.task} met every task at {layout.rendezvous} but could not connect its collective "
            f"sockets within {timeout:g} s (a task may have died meanwhile): {exc}", task=layout.task,
            joined=layout.tasks, address=layout.rendezvous) from exc


def _close(group: Optional[ProcessGroup], opened: List[Any]) -> None:
    """Forgets ``group`` (if any) and closes its store clients, then the server (rank 0)."""
    if group is not None:
        _forget(group)
    for thing in opened:
        thing.close()


def shutdown_all() -> None:
    """Shuts down every process group of this process (run at exit; idempotent)."""
    for group in list(_GROUPS.values()):
        group.shutdown()


def _forget(group: ProcessGroup) -> None:
    """Drops a group that shut down (a later :func:`connect` builds a new one)."""
    with _LOCK:
        if _GROUPS.get(group.key) is group:
            del _GROUPS[group.key]
