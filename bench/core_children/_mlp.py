"""The training workload shared by every child: MLP 784-512-512-10, global batch 256, SGD."""

import numpy as np

BATCH = 256
STEPS = 60
WARMUP = 5
NUM_BATCHES = 8


def make_arrays():
    """Synthetic, memory-resident data: ``NUM_BATCHES`` global batches of (x float32, y int64)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((NUM_BATCHES, BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, size=(NUM_BATCHES, BATCH)).astype(np.int64)
    return x, y


def make_batches():
    """The batches as torch tensors (imported lazily so the TensorFlow child never loads torch)."""
    import torch

    x, y = make_arrays()
    return [(torch.from_numpy(x[i]), torch.from_numpy(y[i])) for i in range(NUM_BATCHES)]
