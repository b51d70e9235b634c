"""Frame plans and the reusable slots of packing.py."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from distribute.collectives import packing
from distribute.collectives.packing import Slot, SlotPool, header_len, metas_of, nan_signalled, plan_frames, wire_plan


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


def test_wire_plan_sends_large_frames_pairwise_after_a_header_piece(monkeypatch: Any) -> None:
    monkeypatch.setattr(packing, "PAIRWISE_MIN_BYTES", 400)
    frames = plan_frames([((100,), torch.float32), ((99,), torch.float32), ((5,), torch.int64)], 400)
    assert [f.numel for f in frames] == [100, 99, 5]
    lead = header_len(torch.float32)
    # frame 0: header piece, then the exchange; frame 1 is under the limit; frame 2 too
    assert wire_plan(frames, pairwise=True) == (((0, lead, False), (lead, lead + 100, True)),
                                                ((0, 99, False),), ((0, 5, False),))
    assert wire_plan(frames, pairwise=False) == (((0, lead + 100, False),), ((0, 99, False),), ((0, 5, False),))


def test_wire_plan_sends_a_lone_medium_tensor_direct_only_in_place_between_two(monkeypatch: Any) -> None:
    monkeypatch.setattr(packing, "PAIRWISE_MIN_BYTES", 4000)
    monkeypatch.setattr(packing, "DIRECT_MIN_BYTES", 400)
    lead = header_len(torch.int32)
    (lone,) = plan_frames([((100,), torch.int32)], 0)
    assert not nan_signalled((lone,), True, True)  # integers have no NaN: a header piece first
    assert wire_plan((lone,), pairwise=True, direct=True) == (((0, lead, False), (lead, lead + 100, False)),)
    # out of place, more than two processes, several tensors, or too small: one piece with the header
    assert wire_plan((lone,), pairwise=True, direct=False) == (((0, lead + 100, False),),)
    assert wire_plan((lone,), pairwise=False, direct=True) == (((0, lead + 100, False),),)
    (two,) = plan_frames([((60,), torch.int32), ((40,), torch.int32)], 0)
    assert wire_plan((two,), pairwise=True, direct=True) == (((0, lead + 100, False),),)
    (small,) = plan_frames([((99,), torch.int32)], 0)
    assert wire_plan((small,), pairwise=True, direct=True) == (((0, lead + 99, False),),)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_a_lone_floating_tensor_in_place_between_two_is_one_piece_without_header(monkeypatch: Any,
                                                                                  dtype: torch.dtype) -> None:
    monkeypatch.setattr(packing, "PAIRWISE_MIN_BYTES", 400)  # signalled up to its own limit, not this one
    monkeypatch.setattr(packing, "SIGNAL_MAX_BYTES", 4000)
    lead = header_len(dtype)
    for numel in (1, 99, 3999 // torch.empty((), dtype=dtype).element_size()):
        frames = plan_frames([((numel,), dtype)], 0)
        assert nan_signalled(frames, True, True)
        assert wire_plan(frames, pairwise=True, direct=True) == (((0, numel, False),),)
        # not in place, not two processes: the header region stays
        assert not nan_signalled(frames, True, False) and not nan_signalled(frames, False, True)
    (small,) = plan_frames([((40,), dtype)], 0)
    assert wire_plan((small,), pairwise=True, direct=False) == (((0, lead + 40, False),),)
    # empty, several tensors, or from the signalled limit: not signalled by the first element
    assert not nan_signalled(plan_frames([((0,), dtype)], 0), True, True)
    assert not nan_signalled(plan_frames([((3,), dtype), ((2,), dtype)], 0), True, True)
    assert not nan_signalled(plan_frames([((3,), dtype), ((2,), torch.int64)], 0), True, True)
    big = plan_frames([((4000 // torch.empty((), dtype=dtype).element_size(),), dtype)], 0)
    assert not nan_signalled(big, True, True)
    assert [pair for _, _, pair in wire_plan(big, pairwise=True, direct=True)[0]] == [False, True]


def test_nan_signalled_fingerprints_say_so_and_differ_from_the_header_plan() -> None:
    from distribute.collectives.verify import make_fingerprint
    metas = [((100,), torch.float32)]
    signalled = make_fingerprint("all_reduce/cpu", "g", metas, 0, True, True, True)
    three = make_fingerprint("all_reduce/cpu", "g", metas, 0, True, False, True)
    assert signalled.nan_signal and signalled.direct and signalled.wire == (((0, 100, False),),)
    assert not three.nan_signal and three.digest != signalled.digest


def test_direct_plan_changes_the_digest_and_says_in_place(monkeypatch: Any) -> None:
    from distribute.collectives.verify import make_fingerprint
    monkeypatch.setattr(packing, "DIRECT_MIN_BYTES", 400)
    metas = [((100,), torch.float32)]
    direct = make_fingerprint("all_reduce/cpu", "g", metas, 0, True, True, True)
    copied = make_fingerprint("all_reduce/cpu", "g", metas, 0, True, True, False)
    assert direct.digest != copied.digest and direct.describe.endswith("(in place)")
    assert not copied.describe.endswith("(in place)")


def test_slot_pieces_hold_whole_tensors(monkeypatch: Any) -> None:
    monkeypatch.setattr(packing, "PAIRWISE_MIN_BYTES", 16)
    tensors = [torch.ones(3), torch.arange(4.0)]
    metas = metas_of(tensors)
    (frame,) = plan_frames(metas, 0)
    (bounds,) = wire_plan((frame,), pairwise=True)
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
