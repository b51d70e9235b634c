"""Device names: TensorFlow's spellings and torch's, mapped to one canonical form.

``"CPU:k"`` names the k-th *logical* replica on the host CPU: any number of them share the
host's memory and cores, so ``MirroredStrategy(["CPU:0", "CPU:1"])`` runs two replicas on a
machine without GPUs. ``"GPU:k"`` (or ``"cuda:k"``) is the k-th visible CUDA device. The
canonical name is TensorFlow's, e.g. ``/job:localhost/replica:0/task:0/device:CPU:1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

import torch

__all__ = ["Device", "available_devices", "canonicalize", "default_devices", "resolve_devices"]

_FULL = re.compile(
    r"^(?:/job:(?P<job>[\w-]+))?(?:/replica:(?P<replica>\d+))?(?:/task:(?P<task>\d+))?"
    r"(?:/device:|/)?(?P<kind>[A-Za-z_]+)(?::(?P<index>\d+))?$"
)
_KINDS = {"cpu": "CPU", "gpu": "GPU", "cuda": "GPU"}


@dataclass(frozen=True)
class Device:
    """A resolved device: its canonical name, kind, index and the torch device it runs on."""

    name: str
    kind: str
    index: int
    torch_device: torch.device

    def __str__(self) -> str:
        return self.name


def available_devices() -> List[str]:
    """Human-readable list of the devices this process can use."""
    gpus = [f"GPU:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    return ["CPU:0", "CPU:1", "... (any number of logical CPU replicas)"] + gpus


def _bad_device(spec: Any, why: str) -> ValueError:
    return ValueError(
        f"Invalid device {spec!r}: {why}. Available devices: {', '.join(available_devices())}. "
        "Write devices as 'CPU:0', 'GPU:1', '/job:localhost/replica:0/task:0/device:GPU:0', "
        "'cpu' or 'cuda:1'."
    )


def canonicalize(spec: Any, job: str = "localhost", task: int = 0) -> Device:
    """Resolves one device name (or ``torch.device``) to a :class:`Device`.

    Example:
        >>> canonicalize("/cpu:1").name
        '/job:localhost/replica:0/task:0/device:CPU:1'
    """
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, torch.device):
        spec = str(spec)
    if not isinstance(spec, str):
        raise TypeError(f"Expected a device name (str or torch.device), received {spec!r} "
                        f"of type {type(spec).__name__}.")
    match = _FULL.match(spec.strip())
    if not match:
        raise _bad_device(spec, "it is not a device name")
    if match.group("kind").lower() not in _KINDS:
        raise _bad_device(spec, f"unknown device kind {match.group('kind')!r} (expected CPU, GPU or cuda)")
    kind = _KINDS[match.group("kind").lower()]
    index = int(match.group("index") or 0)
    job = match.group("job") or job
    task = int(match.group("task")) if match.group("task") is not None else task
    replica = int(match.group("replica") or 0)
    if kind == "GPU":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if index >= count:
            raise _bad_device(spec, f"this process sees {count} GPU(s)")
        torch_device = torch.device("cuda", index)
    else:
        torch_device = torch.device("cpu")
    name = f"/job:{job}/replica:{replica}/task:{task}/device:{kind}:{index}"
    return Device(name, kind, index, torch_device)


def resolve_devices(devices: Sequence[Any], what: str = "devices") -> Tuple[Device, ...]:
    """Resolves a list of device names of one task, refusing empty lists and duplicates.

    Example:
        >>> [d.name for d in resolve_devices(["CPU:0", "cpu:1"])]
        ['/job:localhost/replica:0/task:0/device:CPU:0', '/job:localhost/replica:0/task:0/device:CPU:1']
    """
    if isinstance(devices, (str, torch.device)) or not isinstance(devices, (list, tuple)):
        raise TypeError(f"Expected `{what}` to be a list or tuple of device names, received "
                        f"{devices!r}.")
    if not devices:
        raise ValueError(f"`{what}` must name at least one device; received an empty list. "
                         f"Available devices: {', '.join(available_devices())}.")
    resolved = tuple(canonicalize(d) for d in devices)
    names = [d.name for d in resolved]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"No duplicates allowed in `{what}` argument: {list(devices)!r} names "
                         f"{duplicates} more than once. Available devices: {', '.join(available_devices())}.")
    hosts = sorted({_host(d) for d in resolved})
    if len(hosts) > 1:
        raise RuntimeError("In-graph multi-worker training with `MirroredStrategy` is not supported in eager "
                           f"mode: `{what}` {list(devices)!r} spans the tasks {hosts}. Use "
                           "MultiWorkerMirroredStrategy, with one process per task, to train on several tasks.")
    return resolved


def _host(device: Device) -> str:
    """The ``/job:../replica:../task:..`` prefix of a canonical device name."""
    return device.name.rsplit("/device:", 1)[0]


def default_devices() -> Tuple[Device, ...]:
    """Every visible GPU, or the host CPU when there is none."""
    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return tuple(canonicalize(f"GPU:{i}") for i in range(torch.cuda.device_count()))
    return (canonicalize("CPU:0"),)
