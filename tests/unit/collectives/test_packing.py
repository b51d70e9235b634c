"""Frame plans and the reusable slots of packing.py."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from distribute.collectives import thresholds
from distribute.collectives.packing import Slot, SlotPool, header_len, metas_of, packed_bounds, plan_frames
from distribute.collectives.wire import Pairwise


def test_plan_groups_by_dtype_in_order_of_appearance() -> None:
    metas = [((2,), torch.float32), ((3,), torch.int64), ((4,), torch.float32)]
    plan = plan_frames(metas, 0)
    assert [(f.dtype, f.members, f.numel) for f in plan] == [(torch.float32, (0, 2), 6), (torch.int64, (1,), 3)]


def test_plan_splits_packs_without_splitting_tensors() -> None:
    metas = [((10,), torch.float32), ((10,), torch.float32), ((30,), torch.float32), ((1,), torch.float32)]
    plan = plan_frames(metas, bytes_per_pack=80)  # 20 float32 per pack
    assert [f.members for f in plan] == [(0, 1), (2,), (3,)]


def test_slot_fills_views_and_header() -> None:
    tensors = [torch.ones(2, 2), torch.arange(3.0)]
    (frame,) = plan_frames(metas_of(tensors), 0)
    slot = Slot(frame, metas_of(tensors), torch.device("cpu"), header=True)
    buffer = slot.fill(tensors, frame, 5.0)
    lead = header_len(torch.float32)  # 64 bytes: the header element, then zeros
    assert lead == 16 and buffer.tolist() == [5.0] + [0.0] * 15 + [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 2.0]
    assert slot.views[0].data_ptr() % 64 == 0  # the tensors after the header stay aligned
    assert [tuple(v.shape) for v in slot.views] == [(2, 2), (3,)]
    grad = torch.ones(3, requires_grad=True)
    slot.fill([tensors[0], grad * 2], frame, 0.0)
    assert not slot.buffer.requires_grad and slot.views[1].tolist() == [2.0, 2.0, 2.0]


def test_packed_bounds_put_the_header_in_frame_0_only() -> None:
    frames = plan_frames([((3,), torch.float32), ((2,), torch.int64)], 0)
    assert packed_bounds(frames) == (((0, header_len(torch.float32) + 3, False),), ((0, 2, False),))


def test_pool_reuses_only_idle_slots() -> None:
    pool = SlotPool(capacity=2)
    tensors = [torch.ones(4)]
    (frame,) = plan_frames(metas_of(tensors), 0)
    meta = metas_of(tensors)
    first = pool.get("a", frame, meta, torch.device("cpu"), True)
    assert pool.get("a", frame, meta, torch.device("cpu"), True) is first
    held = first.views[0]  # a result handed out and still used
    second = pool.get("a", frame, meta, torch.device("cpu"), True)
    assert second is not first
    slice_of_second = second.views[0][:2]  # a view of a view also keeps it busy
    assert pool.get("a", frame, meta, torch.device("cpu"), True) is not second
    del held, slice_of_second
    pool.get("b", frame, meta, torch.device("cpu"), True)
    pool.get("c", frame, meta, torch.device("cpu"), True)
    assert len(pool._slots) == 2  # least recently used dropped


def test_slot_pieces_hold_whole_tensors(monkeypatch: Any) -> None:
    monkeypatch.setattr(thresholds, "PAIRWISE_MIN_BYTES", 16)
    tensors = [torch.ones(3), torch.arange(4.0)]
    metas = metas_of(tensors)
    (frame,) = plan_frames(metas, 0)
    (bounds,) = Pairwise().bounds((frame,))
    slot = Slot(frame, metas, torch.device("cpu"), True, bounds)
    assert [p.pairwise for p in slot.pieces] == [False, True] and slot.pieces[0].parts == ()
    assert slot.scratch is not None and slot.scratch.numel() >= 7 - 7 // 2
    wire = slot.fill_piece(tensors, 1)
    assert wire.tolist() == [1.0, 1.0, 1.0, 0.0, 1.0, 2.0, 3.0]
    targets = [torch.zeros(3), torch.zeros(4)]
    slot.copy_out(targets, 1)
    assert targets[1].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="cut tensor 0"):
        lead = header_len(frame.dtype)
        Slot(frame, metas, torch.device("cpu"), True, ((0, lead + 1, False), (lead + 1, lead + frame.numel, True)))
