"""The only place in ``distribute`` that uses private parts of torch, each where no public API exists.

Every function here wraps one private name of torch (torch 2.x) that the collective layer
cannot do without; the comment on each says why. When torch grows a public API for one,
only this file changes.
"""

from __future__ import annotations

import datetime
from typing import Any

import torch
import torch.distributed as dist

__all__ = ["allgather_options", "gloo_options", "nccl_options", "storage_use_count"]


def gloo_options(host: str, timeout: float) -> Any:
    """Options of a gloo backend whose sockets bind ``host`` only, with ``timeout``.

    Private because torch's only public way to choose gloo's interface is the process-wide
    ``GLOO_SOCKET_IFNAME`` variable (an interface, not an address, and an environment
    variable, which only ``cluster_resolver`` may touch); ``ProcessGroupGloo._Options`` with
    ``_devices`` from the public ``create_device(hostname=...)`` binds one address.
    """
    options = dist.ProcessGroupGloo._Options()  # type: ignore[attr-defined]
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=host)]
    options._timeout = datetime.timedelta(seconds=timeout)
    return options


def nccl_options(timeout: float) -> Any:  # pragma: no cover - GPUs only
    """Options of an NCCL backend with ``timeout``.

    Private because ``ProcessGroupNCCL.Options`` has no public timeout field (only
    ``init_process_group``, which builds a global default group, takes one).
    """
    options = dist.ProcessGroupNCCL.Options()
    options._timeout = datetime.timedelta(seconds=timeout)
    return options


def allgather_options(timeout: float) -> Any:
    """``AllgatherOptions`` with ``timeout`` (for a backend's own ``allgather``).

    Private because torch.distributed exports ``AllreduceOptions`` and ``BroadcastOptions``
    but not ``AllgatherOptions``, which a per-call deadline on a backend needs.
    """
    options = torch._C._distributed_c10d.AllgatherOptions()
    options.timeout = datetime.timedelta(seconds=timeout)
    return options


def storage_use_count(tensor: torch.Tensor) -> int:
    """How many tensors share ``tensor``'s storage (-1 if torch cannot tell).

    Private because no public API counts a storage's users; a buffer that is reused between
    collectives must not be while a view of it (even a view of a view) is still held.
    """
    try:
        return int(torch._C._storage_Use_Count(tensor.untyped_storage()._cdata))
    except (AttributeError, RuntimeError):  # pragma: no cover - another torch: never reuse
        return -1
