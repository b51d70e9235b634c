"""The wire methods of wire.py: which one carries an all-reduce, its pieces, and the fast-path option."""

from __future__ import annotations

from typing import Any, FrozenSet, Sequence, Tuple

import pytest
import torch

from distribute.collectives import thresholds
from distribute.collectives.packing import Bounds, Frame, Meta, header_len, plan_frames  # noqa: F401
from distribute.collectives.verify import Fingerprint, make_fingerprint
from distribute.collectives.wire import (FAST_PATHS, METHODS, NanSignalled, Packed, PlanInputs, choose, fast_path_set,
                                         option_tag)


def wire_plan(frames: Tuple[Frame, ...], pairwise: bool = False, direct: bool = False,
              enabled: FrozenSet[str] = FAST_PATHS) -> Tuple[Bounds, ...]:
    """The pieces of the method chosen for two processes (``pairwise``), in place (``direct``)."""
    return choose(PlanInputs(frames, pairwise, direct, enabled)).bounds(frames)


def nan_signalled(frames: Tuple[Frame, ...], pairwise: bool, direct: bool) -> bool:
    return isinstance(choose(PlanInputs(frames, pairwise, direct, FAST_PATHS)), NanSignalled)


def fingerprint(metas: Sequence[Meta], pairwise: bool, inplace: bool,
                enabled: FrozenSet[str] = FAST_PATHS) -> Fingerprint:
    frames = plan_frames(metas, 0)
    method = choose(PlanInputs(frames, pairwise, inplace, enabled))
    return make_fingerprint("all_reduce/cpu", "g", metas, 0, frames=frames, method=method, inplace=inplace,
                            option=option_tag(enabled))


def test_wire_plan_sends_large_frames_pairwise_after_a_header_piece(monkeypatch: Any) -> None:
    monkeypatch.setattr(thresholds, "PAIRWISE_MIN_BYTES", 400)
    frames = plan_frames([((100,), torch.float32), ((99,), torch.float32), ((5,), torch.int64)], 400)
    assert [f.numel for f in frames] == [100, 99, 5]
    lead = header_len(torch.float32)
    # frame 0: header piece, then the exchange; frame 1 is under the limit; frame 2 too
    assert wire_plan(frames, pairwise=True) == (((0, lead, False), (lead, lead + 100, True)),
                                                ((0, 99, False),), ((0, 5, False),))
    assert wire_plan(frames, pairwise=False) == (((0, lead + 100, False),), ((0, 99, False),), ((0, 5, False),))


def test_wire_plan_sends_a_lone_medium_tensor_direct_only_in_place_between_two(monkeypatch: Any) -> None:
    monkeypatch.setattr(thresholds, "PAIRWISE_MIN_BYTES", 4000)
    monkeypatch.setattr(thresholds, "DIRECT_MIN_BYTES", 400)
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
    monkeypatch.setattr(thresholds, "PAIRWISE_MIN_BYTES", 400)  # signalled up to its own limit, not this one
    monkeypatch.setattr(thresholds, "SIGNAL_MAX_BYTES", 4000)
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
    metas = [((100,), torch.float32)]
    signalled = fingerprint(metas, True, True)
    three = fingerprint(metas, False, True)
    assert signalled.nan_signal and signalled.direct and signalled.wire == (((0, 100, False),),)
    assert not three.nan_signal and three.digest != signalled.digest


def test_direct_plan_changes_the_digest_and_says_in_place(monkeypatch: Any) -> None:
    monkeypatch.setattr(thresholds, "DIRECT_MIN_BYTES", 400)
    metas = [((100,), torch.float32)]
    direct = fingerprint(metas, True, True)
    copied = fingerprint(metas, True, False)
    assert direct.digest != copied.digest and direct.describe.endswith("(in place)")
    assert not copied.describe.endswith("(in place)")


def test_packed_is_last_and_always_applies() -> None:
    assert isinstance(METHODS[-1], Packed) and [m.name for m in METHODS] == ["nan_signal", "pairwise", "direct",
                                                                            "packed"]
    frames = plan_frames([((10,), torch.float32)], 0)
    assert Packed().applies(PlanInputs(frames, False, False, frozenset()))


@pytest.mark.parametrize("metas, pairwise, inplace", [
    ([((100,), torch.float32)], True, True),           # NaN-signalled when on
    ([((3000,), torch.float32)], True, False),         # pairwise when on
    ([((300,), torch.int32)], True, True),             # direct when on
    ([((3,), torch.float32), ((5,), torch.int64)], True, True),  # direct (the lone int64 frame) when on
])
def test_with_fast_paths_off_every_all_reduce_is_packed(monkeypatch: Any, metas: Any, pairwise: bool,
                                                        inplace: bool) -> None:
    monkeypatch.setattr(thresholds, "PAIRWISE_MIN_BYTES", 4000)
    monkeypatch.setattr(thresholds, "DIRECT_MIN_BYTES", 1000)
    monkeypatch.setattr(thresholds, "SIGNAL_MAX_BYTES", 4000)
    frames = plan_frames(metas, 0)
    assert not isinstance(choose(PlanInputs(frames, pairwise, inplace, FAST_PATHS)), Packed)
    for name in FAST_PATHS:  # each fast path can be turned off on its own
        chosen = choose(PlanInputs(frames, pairwise, inplace, FAST_PATHS - {name}))
        assert chosen.name != name
    assert isinstance(choose(PlanInputs(frames, pairwise, inplace, frozenset())), Packed)


def test_the_option_is_in_the_digest_and_the_description() -> None:
    metas = [((4,), torch.float32)]
    on, off = fingerprint(metas, False, False), fingerprint(metas, False, False, frozenset())
    assert on.wire == off.wire and on.digest != off.digest  # same messages, yet workers never agree
    assert off.describe.endswith("[fast paths off]") and "fast paths" not in on.describe
    some = fingerprint(metas, False, False, frozenset({"direct"}))
    assert some.describe.endswith("[fast paths: direct]") and len({on.digest, off.digest, some.digest}) == 3
    gather_on = make_fingerprint("all_gather", "g", [((-1,), torch.float32)], 0, False)
    gather_off = make_fingerprint("all_gather", "g", [((-1,), torch.float32)], 0, False, option=option_tag(frozenset()))
    assert gather_on.digest != gather_off.digest


def test_fast_path_set_takes_bools_and_names() -> None:
    assert fast_path_set(True) == FAST_PATHS and fast_path_set(False) == frozenset()
    assert fast_path_set(["direct", "pairwise"]) == {"direct", "pairwise"}
    for bad in (1, None, "direct", ["direct", "warp"], [3]):
        with pytest.raises(ValueError, match="fast_paths must be True, False or a collection") as info:
            fast_path_set(bad)
        assert repr(bad) in str(info.value)
