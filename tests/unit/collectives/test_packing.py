"""Frame plans and the reusable slots of packing.py."""

from __future__ import annotations

import torch

from distribute.collectives.packing import Slot, SlotPool, metas_of, plan_frames


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
    assert buffer.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 2.0, 5.0]
    assert [tuple(v.shape) for v in slot.views] == [(2, 2), (3,)]
    grad = torch.ones(3, requires_grad=True)
    slot.fill([tensors[0], grad * 2], frame, 0.0)
    assert not slot.buffer.requires_grad and slot.views[1].tolist() == [2.0, 2.0, 2.0]


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
