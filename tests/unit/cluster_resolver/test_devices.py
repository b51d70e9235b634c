"""Tests of the local device counts."""

import torch

from distribute.cluster_resolver import _devices


def test_cpu_count():
    assert _devices.cpu_count() >= 1


def test_cuda_matches_torch():
    names = _devices.cuda_device_names()
    counts = _devices.local_accelerators()
    available = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert len(names) == available
    assert counts.get("GPU", 0) == available
    assert counts["TPU"] == 0  # a defaultdict(int), as TensorFlow returns
