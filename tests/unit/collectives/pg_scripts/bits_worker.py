"""Worker script (2 tasks): sums through every wire method, as raw bits, for comparing options.

The thresholds are lowered so that small tensors take each wire method (NaN-signalled,
pairwise, direct, packed); run once with ``DISTRIBUTE_FAST_PATHS=1`` and once with ``0``, the
bits must be the same. Prints the bits' digests and the calls each method carried.
"""

from __future__ import annotations

import hashlib

import torch

from distribute.collectives import thresholds

from _script import emit, join

thresholds.PAIRWISE_MIN_BYTES = 4096
thresholds.SIGNAL_MAX_BYTES = 4096
thresholds.DIRECT_MIN_BYTES = 1024
thresholds.SEGMENT_BYTES = 1000

CASES = {  # name: (shapes and dtypes, in place)
    "signalled": ([((7, 5), torch.float32)], True),
    "signalled half": ([((300,), torch.bfloat16)], True),
    "pairwise": ([((3001,), torch.float32)], False),
    "pairwise in place": ([((2000,), torch.float64)], True),
    "direct": ([((500,), torch.int64)], True),
    "direct frame 1": ([((3,), torch.float32), ((9,), torch.int32)], True),
    "packed": ([((3, 4), torch.float32), ((5,), torch.float16), ((2,), torch.int64)], False),
}


def data(rank: int, shapes: list) -> list:
    gen = torch.Generator().manual_seed(17 + rank)
    out = []
    for shape, dtype in shapes:
        values = torch.randn(shape, generator=gen) * 1000
        out.append(values.to(dtype) if dtype.is_floating_point else values.round().to(dtype))
    return out


def digest(tensors: list) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    group = join()
    found = {}
    for name, (shapes, inplace) in CASES.items():
        for round_ in range(3):  # planned and agreed in full, then predicted
            tensors = data(group.rank, shapes)
            sums = group.all_reduce(tensors, note=name, inplace=inplace)
            found[f"{name} {round_}"] = digest(sums)
    emit("bits", found)
    emit("counts", group.wire_counts)
    emit("fast_paths", sorted(group.fast_paths))
    group.shutdown()


if __name__ == "__main__":
    main()
