"""The sum of a large flat buffer between two processes, out of place, without a copy in.

gloo's all-reduce works in place, so a collective that must leave its inputs alone first
copies them into a buffer: at 64 MB that copy costs a sixth of the all-reduce on a 2-core
machine, and it cannot be hidden (both cores are busy moving data). Between two processes
the same sum can be computed with point-to-point messages that read the input where it is:

1. each process owns one half; it sends the other half of its input to its peer, segment by
   segment (``thresholds.SEGMENT_BYTES``), and receives the peer's copy of its own half;
2. as each segment arrives it adds it to its own input, writing the sum straight into the
   output (this add is the copy, fused with the reduction gloo does anyway), and sends the
   summed segment back;
3. the peer's summed segments arrive directly in the other half of the output.

Every element is summed once, by its owner, so both processes get bit-identical results.
``out`` may be ``source`` itself (an in-place sum). Both processes must call this with the
same sizes: the caller agrees on the collective first (``verify.py``), since gloo cannot
tell a mismatched message from a slow one.

Example (in each of two processes; ``group`` a ``ProcessGroupGloo`` of 2)::

    x = torch.ones(1 << 24)
    out = torch.empty_like(x)
    works = exchange(group, x, out, group.rank(), scratch=torch.empty(x.numel() // 2 + 1))
    for work in works: work.wait()   # out is 2.0 everywhere; x is untouched
"""

from __future__ import annotations

from typing import Any, List

import torch

from distribute.collectives import thresholds

__all__ = ["exchange"]

_SECOND_PHASE_TAG = 1 << 20


def _halves(numel: int) -> List[int]:
    return [0, numel // 2, numel]


def exchange(group: Any, source: torch.Tensor, out: torch.Tensor, rank: int, scratch: torch.Tensor,
             wait: Any = None) -> List[Any]:
    """Sums the flat ``source`` of this process and of its peer into ``out``.

    Args:
        group: a gloo backend of two ranks (``send``/``recv``).
        source: this process's flat contiguous input (not modified unless it is ``out``).
        out: flat contiguous output of the same size and dtype.
        rank: this process's rank, 0 or 1.
        scratch: a flat buffer of at least ``numel - numel // 2`` elements of the dtype.
        wait: ``wait(work)`` blocks until a receive is done (default ``work.wait()``).

    Returns:
        The works still to wait for (sends and the receives of the peer's half).
    """
    if source.numel() != out.numel() or source.dtype != out.dtype or rank not in (0, 1):
        raise ValueError(f"exchange needs source and out of one size and dtype and a rank of 0 or 1; received "
                         f"{source.numel()} {source.dtype}, {out.numel()} {out.dtype}, rank {rank!r}.")
    wait = wait or (lambda work: work.wait())
    cuts, peer = _halves(source.numel()), 1 - rank
    mine, theirs = (cuts[rank], cuts[rank + 1]), (cuts[peer], cuts[peer + 1])
    count = max(1, (cuts[2] - cuts[1]) * source.element_size() // thresholds.SEGMENT_BYTES)  # the same on both ranks
    src_mine = source[mine[0]:mine[1]].tensor_split(count)
    src_theirs = source[theirs[0]:theirs[1]].tensor_split(count)
    out_mine = out[mine[0]:mine[1]].tensor_split(count)
    out_theirs = out[theirs[0]:theirs[1]].tensor_split(count)
    incoming = scratch[:mine[1] - mine[0]].tensor_split(count)
    pending = [group.send([segment], peer, i) for i, segment in enumerate(src_theirs)]
    arrivals = [group.recv([segment], peer, i) for i, segment in enumerate(incoming)]
    pending += [group.recv([segment], peer, _SECOND_PHASE_TAG + i) for i, segment in enumerate(out_theirs)]
    for i, arrival in enumerate(arrivals):
        wait(arrival)
        torch.add(src_mine[i], incoming[i], out=out_mine[i])
        pending.append(group.send([out_mine[i]], peer, _SECOND_PHASE_TAG + i))
    return pending
