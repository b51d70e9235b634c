"""The agreement protocol of an all-reduce around its wire method, and the general piece loop.

:func:`reduce` is the protocol of ``verify.py``: when the agreement predicts this collective, its
wire method sends right away (a mismatch shows in the summed header, or the NaN-signalled first
element); when another one is predicted, this worker sends markers shaped like the predicted
pieces first; then a full check. :func:`stream` is how the header-carrying methods
(``wire.Packed``, ``wire.Direct``, ``wire.Pairwise``) move their pieces: all-reduces of the
filled buffer, of the caller's tensor itself (direct), or pairwise exchanges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import torch
from torch.autograd.graph import increment_version

from distribute.collectives.link import Link
from distribute.collectives.packing import Slot, direct_target
from distribute.collectives.pairwise import exchange
from distribute.collectives.verify import SPECULATIVE_PIECES, Verifier

if TYPE_CHECKING:  # pragma: no cover
    from distribute.collectives.verify import Fingerprint

__all__ = ["Channel", "reduce", "send_markers", "stream"]


@dataclass(frozen=True)
class Channel:
    """What the wire methods use of a group: its link, its agreement history and its rank."""

    link: Link
    verifier: Verifier
    rank: int


def reduce(channel: Channel, fp: "Fingerprint", slots: List[Slot], tensors: List[torch.Tensor],
           targets: Optional[List[torch.Tensor]], limit: float) -> List[Slot]:
    """Sums through ``slots`` with ``fp``'s wire method, agreed by prediction or in full."""
    verifier, method = channel.verifier, fp.method
    assert method is not None  # an all-reduce's fingerprint always has its method
    predicted = verifier.predicted()
    if predicted is not None:
        if predicted.digest == fp.digest:
            if method.send(channel, fp, slots, tensors, targets, limit, True):
                verifier.agree(fp)
                return slots
        else:
            send_markers(channel.link, predicted, limit)
    verifier.full_check(fp)
    method.send(channel, fp, slots, tensors, targets, limit, False)
    verifier.agree(fp)
    return slots


def stream(channel: Channel, fp: "Fingerprint", slots: List[Slot], tensors: List[torch.Tensor],
           targets: Optional[List[torch.Tensor]], limit: float, check: bool) -> bool:
    """Fills and sends every piece (all-reduces run while later pieces are filled).

    With ``check`` (a predicted collective), the summed header is read after at most
    ``SPECULATIVE_PIECES`` all-reduce pieces and before any pairwise exchange; False means
    a worker did something else (nothing more was sent, and everything sent has arrived).
    """
    link = channel.link
    cuda = slots[0].buffer.device.type == "cuda"
    works: List[Tuple[Any, Slot, int]] = []
    for slot in slots:
        for k, piece in enumerate(slot.pieces):
            if check and (piece.pairwise or len(works) == SPECULATIVE_PIECES):
                if not _header_clear(link, works, slots[0], limit, cuda):
                    return False
                check = False
            if piece.pairwise:
                _exchange(channel, slot, k, tensors, targets, limit)
                continue
            target = direct_target(piece, targets) if fp.direct else None
            if target is None:
                works.append((link.allreduce(slot.fill_piece(tensors, k), limit, cuda), slot, k))
            else:  # summed where it is: a predicted peer that differs sends zeros here (see verify.py)
                works.append((link.allreduce(target, limit, cuda), slot, -1))
                increment_version(target)  # written behind torch's back: tell autograd
    if check and not _header_clear(link, works, slots[0], limit, cuda):
        return False
    for work, slot, k in works:
        if cuda or not work.is_completed():
            link.wait(work, limit, cuda)
        if targets is not None and k >= 0:
            slot.copy_out(targets, k)
    return True


def _exchange(channel: Channel, slot: Slot, k: int, tensors: List[torch.Tensor],
              targets: Optional[List[torch.Tensor]], limit: float) -> None:
    """Sums piece ``k`` with the peer by a pairwise exchange, reading a lone tensor in place."""
    piece = slot.pieces[k]
    lone = piece.parts[0][0] if len(piece.parts) == 1 else None
    direct = False  # the sums are written into the target itself
    if lone is not None and tensors[lone].device == slot.buffer.device and tensors[lone].is_contiguous():
        source = tensors[lone].detach().view(-1)
        direct = targets is not None
        out = source if direct else piece.wire
    else:
        source = out = slot.fill_piece(tensors, k)
    link = channel.link

    def wait(work: Any) -> None:
        link.wait_p2p(work, limit)

    assert slot.scratch is not None  # a slot with a pairwise piece has its scratch buffer
    for work in exchange(link.gloo, source, out, channel.rank, slot.scratch, wait):
        wait(work)
    if direct:
        increment_version(source)  # written behind torch's back: tell autograd
    if targets is not None and not direct:
        slot.copy_out(targets, k)


def _header_clear(link: Link, works: List[Tuple[Any, Slot, int]], first: Slot, limit: float, cuda: bool) -> bool:
    """Whether every worker sent the predicted collective (waits for all sent when not)."""
    link.wait_first(works[0][0], limit, cuda)
    if not first.header.item():  # type: ignore[union-attr]
        return True
    first.dirty = True
    for work, _, _ in works[1:]:
        link.wait(work, limit, cuda)
    return False


def send_markers(link: Link, predicted: "Fingerprint", limit: float) -> None:
    """Sends zero pieces shaped like the predicted ones, flagged 'not this collective'.

    As many as a worker running the predicted collective sends before reading the header.
    """
    cuda = predicted.kind.endswith("/cuda")
    shapes: List[Tuple[torch.dtype, int]] = []
    for frame, bounds in zip(predicted.frames, predicted.wire):
        for start, stop, pair in bounds:
            if pair or len(shapes) == SPECULATIVE_PIECES:
                break
            shapes.append((frame.dtype, stop - start))
        else:
            continue
        break
    markers = [torch.zeros(numel, dtype=dtype, device="cuda" if cuda else "cpu") for dtype, numel in shapes]
    markers[0][0] = float("nan") if predicted.nan_signal else 1
    works = [link.allreduce(marker, limit, cuda) for marker in markers]
    for work in works:
        link.wait(work, limit, cuda)
