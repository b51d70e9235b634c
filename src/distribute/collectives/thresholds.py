"""Every size threshold of the wire methods (``wire.py``), each with the measurement behind it.

The code reads these as ``thresholds.NAME`` when it plans a collective, so a test may lower
one (``monkeypatch.setattr(thresholds, ...)``) to send small tensors down a path. Plans are
cached (``plans.py``): change a threshold before the first call of the collectives it should
affect.

Measured on the 2-core development VM with ``python bench/bench_fast_paths.py`` (2 worker
processes started by ``distribute.launch``; each fast path and the general packed path are
planned for the same all-reduce and timed in alternating turns in the same processes; figures
are the fast path's seconds per call divided by the general path's, medians of the pairs, with
their quartiles), unless a figure says otherwise.
"""

from __future__ import annotations

__all__ = ["DIRECT_MIN_BYTES", "PAIRWISE_MIN_BYTES", "SEGMENT_BYTES", "SIGNAL_MAX_BYTES"]

SIGNAL_MAX_BYTES = 32 << 20
"""Below this size a lone floating-point tensor summed in place between two processes is
NaN-signalled (``wire.NanSignalled``); from it, the pairwise exchange takes over. Pairwise
exchange against raw gloo's in-place all-reduce (``bench/bench_multiworker.py``, 2026-11-22):
0.85-0.95x raw's bandwidth at 16 MB, even at 32 MB, 1.05-1.09x at 64 MB."""

PAIRWISE_MIN_BYTES = 16 << 20
"""Frames from this size travel as a pairwise exchange between two processes
(``wire.Pairwise``, ``pairwise.py``): it saves the copy of the input into the buffer."""

DIRECT_MIN_BYTES = 4 << 20
"""From this size a lone tensor that cannot be NaN-signalled (integers, bool, complex) summed
in place between two processes travels direct, after a header piece (``wire.Direct``): below
it, the extra header message costs more than the copies it saves."""

SEGMENT_BYTES = 2 << 20
"""Size of one message of the pairwise exchange; segments travel while earlier ones are summed."""
