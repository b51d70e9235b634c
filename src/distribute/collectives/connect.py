"""Joining the cluster: the one process group of each task, built once and shared.

:func:`connect` meets the other tasks (``rendezvous.py``), builds a gloo process group whose
sockets listen on this task's own address only (plus an NCCL group for CUDA tensors when
asked), starts the heartbeat (``health.py``) and returns the task's
:class:`~distribute.collectives.process_group.ProcessGroup`. A second call for the same cluster
and task returns the same group; :func:`shutdown_all` (also run at exit) closes them all.

Example (in each of two processes with the same cluster and its own task)::

    group = connect(ClusterSpec({"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}), "worker", rank)
    total, = group.all_reduce([torch.ones(3)], note="example")   # tensor([2., 2., 2.])
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Any, Dict, Optional, Tuple

import torch
import torch.distributed as dist

from distribute.cluster_resolver import ClusterSpec, parse_address
from distribute.collectives import health
from distribute.collectives.failures import RendezvousTimeoutError
from distribute.collectives.process_group import ProcessGroup
from distribute.collectives.rendezvous import Layout, join, make_layout, open_store

__all__ = ["DEFAULT_COLLECTIVE_TIMEOUT", "DEFAULT_RENDEZVOUS_TIMEOUT", "connect", "shutdown_all"]

DEFAULT_RENDEZVOUS_TIMEOUT = 30.0
"""Seconds the tasks have to meet when ``CommunicationOptions.timeout_seconds`` is not set."""
DEFAULT_COLLECTIVE_TIMEOUT = 120.0
"""Seconds a collective may wait for its peers when ``timeout_seconds`` is not set."""
_GROUPS: Dict[Tuple[str, int, bool], ProcessGroup] = {}
_LOCK = threading.Lock()


def _gloo_group(store: dist.Store, layout: Layout, timeout: float) -> Any:
    """A gloo group whose sockets listen on this task's own address only."""
    options = dist.ProcessGroupGloo._Options()  # type: ignore[attr-defined]
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=layout.host)]
    options._timeout = datetime.timedelta(seconds=timeout)
    return dist.ProcessGroupGloo(dist.PrefixStore("distribute/gloo/", store), layout.rank, layout.world_size, options)


def _nccl_group(store: dist.Store, layout: Layout, timeout: float) -> Any:  # pragma: no cover - GPUs only
    options = dist.ProcessGroupNCCL.Options()
    options._timeout = datetime.timedelta(seconds=timeout)
    return dist.ProcessGroupNCCL(dist.PrefixStore("distribute/nccl/", store), layout.rank, layout.world_size, options)


def connect(cluster_spec: ClusterSpec, task_type: str, task_id: int, *, rendezvous_timeout: Optional[float] = None,
            collective_timeout: Optional[float] = None, nccl: bool = False) -> ProcessGroup:
    """Joins (or reuses) this task's process group with the chief and worker tasks of the cluster.

    Args:
        cluster_spec: the cluster; rank 0 (the chief, else the first worker) hosts the
            rendezvous at its own address.
        task_type: this task's job (``'chief'`` or ``'worker'``).
        task_id: this task's index in its job.
        rendezvous_timeout: seconds for all tasks to meet (default 30).
        collective_timeout: default seconds a collective waits for its peers (default 120).
        nccl: also build an NCCL group, used for CUDA tensors.

    Raises:
        PortInUseError: rank 0 cannot listen because its port is taken.
        RendezvousTimeoutError: not every task arrived in time (the message lists which did).
        ClusterConfigError: the tasks disagree about the cluster, or this task is not in it.
        AlreadyExistsError: another process already joined as this task.
    """
    if nccl and not (dist.is_nccl_available() and torch.cuda.is_available()):
        raise ValueError("nccl=True needs a CUDA build of torch with NCCL and a visible GPU; received a "
                         "machine without them. Use gloo (nccl=False).")
    layout = make_layout(cluster_spec, task_type, task_id)
    with _LOCK:
        group = _GROUPS.get((layout.digest, layout.rank, nccl))
    if group is None or group._closed:
        # Built outside the lock: a second claim of the same task fails in the rendezvous.
        group = _build(layout, rendezvous_timeout or DEFAULT_RENDEZVOUS_TIMEOUT,
                       collective_timeout or DEFAULT_COLLECTIVE_TIMEOUT, nccl)
        with _LOCK:
            _GROUPS[group._key()] = group
    if group.world_size > 1:
        health.install_exit_hooks(lambda: list(_GROUPS.values()), shutdown_all)
    return group


def _build(layout: Layout, rendezvous_timeout: float, collective_timeout: float, nccl: bool) -> ProcessGroup:
    deadline = time.monotonic() + rendezvous_timeout
    store = open_store(layout, deadline, rendezvous_timeout)
    parts: Dict[str, Any] = {"store": store, "nccl_wanted": nccl, "forget": _forget}
    records = join(store, layout, deadline, rendezvous_timeout, health.process_identity())
    store.set_timeout(datetime.timedelta(seconds=max(1.0, deadline - time.monotonic())))
    parts["gloo"] = _connect_data(lambda: _gloo_group(store, layout, collective_timeout), layout, rendezvous_timeout)
    if nccl:  # pragma: no cover - GPUs only
        parts["nccl"] = _connect_data(lambda: _nccl_group(store, layout, collective_timeout), layout,
                                      rendezvous_timeout)
    address = parse_address(layout.rendezvous)
    monitor_store = dist.TCPStore(address.host, address.port, None, False,
                                  datetime.timedelta(seconds=max(1.0, deadline - time.monotonic())))
    parts["board"] = health.Board(store, layout.tasks, layout.rank)
    parts["monitor_store"] = monitor_store
    group = ProcessGroup(layout, parts, records, collective_timeout)
    monitor = health.Monitor(health.Board(monitor_store, layout.tasks, layout.rank), group._status, layout.rank)
    parts["monitor"] = monitor
    monitor.start()
    return group


def _connect_data(make: Any, layout: Layout, timeout: float) -> Any:
    try:
        return make()
    except RuntimeError as exc:
        raise RendezvousTimeoutError(
            f"{layout.task} met every task at {layout.rendezvous} but could not connect its collective "
            f"sockets within {timeout:g} s (a task may have died meanwhile): {exc}", task=layout.task,
            joined=layout.tasks, address=layout.rendezvous) from exc


def shutdown_all() -> None:
    """Shuts down every process group of this process (run at exit; idempotent)."""
    for group in list(_GROUPS.values()):
        group.shutdown()


def _forget(group: ProcessGroup) -> None:
    """Drops a group that shut down (a later :func:`connect` builds a new one)."""
    with _LOCK:
        if _GROUPS.get(group._key()) is group:
            del _GROUPS[group._key()]
