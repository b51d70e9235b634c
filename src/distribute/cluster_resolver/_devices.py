"""Counting the local devices: CPUs from the OS, CUDA GPUs from torch (imported lazily)."""

from __future__ import annotations

import collections
import os
from typing import DefaultDict, List


def cpu_count() -> int:
    """The number of CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cuda_device_names() -> List[str]:
    """The names of the CUDA devices torch can see (an empty list without CUDA)."""
    import torch  # Local import: only counting devices needs torch.

    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def local_accelerators() -> DefaultDict[str, int]:
    """``{'GPU': n}`` for the n local CUDA devices; empty (a ``defaultdict(int)``) without any."""
    import torch  # Local import: only counting devices needs torch.

    counts: DefaultDict[str, int] = collections.defaultdict(int)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus:
        counts["GPU"] = gpus
    return counts
