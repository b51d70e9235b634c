"""Every size threshold of the wire methods (``wire.py``), each with the measurement behind it.

The code reads these as ``thresholds.NAME`` when it plans a collective, so a test may lower
one (``monkeypatch.setattr(thresholds, ...)``) to send small tensors down a path. Plans are
cached (``plans.py``): change a threshold before the first call of the collectives it should
affect.

Unless a figure says otherwise it comes from ``python bench/bench_fast_paths.py`` (3
invocations, 2026-12-01, on the 2-core development VM while other engineers loaded it): 2
worker processes started by ``distribute.launch``; in each, the same all-reduce is planned with
one fast path on and with every fast path off (the general packed path), and the two are timed
in alternating turns, 12 pairs per invocation. Figures are the fast path's time ÷ the general
path's: the median of the 36 pairs, their quartiles, then the median of each invocation. The
first figures are from the code before the wire methods became classes; "after:" gives the
medians of a second run on this code.
"""

from __future__ import annotations

__all__ = ["DIRECT_MIN_BYTES", "PAIRWISE_MIN_BYTES", "SEGMENT_BYTES", "SIGNAL_MAX_BYTES"]

SIGNAL_MAX_BYTES = 32 << 20
"""Below this size a lone floating-point tensor summed in place between two processes is
NaN-signalled (``wire.NanSignalled``): no header, no copy in or out. NaN-signalled ÷ general,
float32 in place: 4 KB 1.01 (0.85-1.43; 0.92, 1.39, 1.08), 64 KB 0.92 (0.73-1.32), 1 MB 0.81
(0.59-1.27; 0.84, 0.90, 0.69), 8 MB 0.82 (0.65-0.89; 0.72, 0.85, 0.79); after: 1.00, 1.11
(0.80-1.51), 0.84, 0.74 (0.67-0.84): a clear gain from 1 MB, noise below. From this size the
pairwise exchange takes over: against raw gloo's in-place all-reduce
(``bench/bench_multiworker.py``, 2026-11-22) it gave 0.85-0.95x raw's bandwidth at 16 MB, even
at 32 MB, 1.05-1.09x at 64 MB, while gloo's own all-reduce of the tensor (this path) is raw
gloo's speed by construction."""

PAIRWISE_MIN_BYTES = 16 << 20
"""Frames from this size travel as a pairwise exchange between two processes
(``wire.Pairwise``, ``pairwise.py``), which reads (and in place writes) a lone tensor where it
is instead of copying it into the buffer. Pairwise ÷ general, float32: out of place 16 MB 1.01
(0.90-1.12; 1.05, 0.93, 1.04, even: this is where it stops costing), 64 MB 0.93 (0.87-1.00;
0.97, 0.94, 0.91); in place 64 MB 0.76 (0.71-0.85; 0.77, 0.77, 0.76); after: 0.88 (0.78-1.05), 0.84 (0.76-0.93),
in place 0.70 (0.63-0.77)."""

DIRECT_MIN_BYTES = 4 << 20
"""From this size a lone tensor that cannot be NaN-signalled (integers, bool, complex) summed in
place between two processes travels direct, after a header piece of its own (``wire.Direct``).
Direct ÷ general, int64 in place: 4 MB 0.79 (0.58-0.90; 0.86, 0.80, 0.69), 8 MB 0.83 (0.68-0.99;
0.83, 0.96, 0.72); after: 0.83 (0.67-0.96), 0.80 (0.69-0.91). Below it, the extra header message
costs about what the copies it saves do (2026-11-21: 0.79-0.84 of raw's bandwidth at 1 MB with
the header in a message of its own)."""

SEGMENT_BYTES = 2 << 20
"""Size of one message of the pairwise exchange; segments travel while earlier ones are summed
(a size that keeps a few segments in flight for the frames from ``PAIRWISE_MIN_BYTES``; not
re-measured here)."""
