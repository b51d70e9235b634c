"""Splitting global batches into per-replica batches: the two algorithms of TensorFlow.

Notation: ``N`` replicas in sync over ``W`` workers, ``R = N / W`` on this worker (index ``w``).

* **Per-batch slicing** (TensorFlow's legacy rebatch, what in-memory datasets get by default):
  each batch of ``b`` rows is cut into ``N`` pieces of ``s = ceil(b / N)`` rows; piece ``k`` holds
  rows ``[k*s, min((k+1)*s, b))`` and is empty when ``k*s >= b``. Under DATA sharding worker
  ``w`` keeps pieces ``k = r*W + w`` (replica ``r``), one step per batch; otherwise the worker's
  replicas take all ``N`` pieces in turn, ``R`` per step.
* **Stream rebatch** (used when the static batch size ``B`` is known and the policy is OFF,
  HINT, or FILE/AUTO on files with one worker): the rows form one continuous stream cut into
  pieces of sizes ``[B//N + 1] * (B % N) + [B//N] * (N - B % N)``, rotated left by ``w*R``, in
  a cycle; ``R`` pieces per step. A short final piece goes to the first replicas.

A *step* is the list of this worker's ``R`` pieces; :data:`MISSING` marks a replica that gets
no piece because the data ran out (the iterator then decides between an empty batch and the
end of the data). Each source saves its position (the batch input's, plus rows or pieces it
holds) as plain data.
"""

from __future__ import annotations

import abc
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

from distribute._base import nest
from distribute.data import _structure
from distribute.distributed_input.auto_shard import DATA, FILE_SHARDED
from distribute.distributed_input.sources import END, BatchInput

__all__ = ["MISSING", "DealSource", "PerReplicaSource", "SliceSource", "StepSource", "StreamSource",
           "choose", "piece_bounds", "stream_sizes"]

MISSING = None
"""A replica without a piece in a step (the data ended)."""

SLICE = "slice"
STREAM = "stream"


def piece_bounds(rows: int, num_pieces: int) -> List[tuple]:
    """The ``(start, stop)`` rows of each of ``num_pieces`` pieces of a batch of ``rows``."""
    size = -(-rows // num_pieces)
    return [(min(k * size, rows), min((k + 1) * size, rows)) for k in range(num_pieces)]


def stream_sizes(batch_size: int, num_replicas: int, num_workers: int, worker_index: int) -> List[int]:
    """Piece sizes of the stream rebatch for one worker (one cycle of ``N`` pieces)."""
    floor, rem = divmod(batch_size, num_replicas)
    sizes = [floor + 1] * rem + [floor] * (num_replicas - rem)
    shift = worker_index * (num_replicas // num_workers)
    return sizes[shift:] + sizes[:shift]


def choose(applied: str, static_batch_size: int) -> str:
    """The algorithm for a sharding outcome (see the module docstring)."""
    if applied in (DATA, FILE_SHARDED) or static_batch_size < 0:
        return SLICE
    return STREAM


def _encode(element: Any) -> Any:
    return None if element is None else _structure.encode(element)


def _decode(encoded: Any, template: Any) -> Any:
    return None if encoded is None else _structure.decode(encoded, template)


class StepSource(abc.ABC):
    """Produces this worker's steps: lists of ``R`` pieces (MISSING where none), None at the end."""

    def __init__(self, inputs: Sequence[BatchInput]) -> None:
        self.inputs = list(inputs)

    @abc.abstractmethod
    def next_step(self) -> Optional[List[Any]]:
        """The next step, or None when no replica has a piece."""

    def state(self) -> Dict[str, Any]:
        """The position as plain data."""
        return {"inputs": [i.state() for i in self.inputs], **self._held_state()}

    def restore(self, state: Dict[str, Any]) -> None:
        """Continues from a position saved by :meth:`state`."""
        for batch_input, saved in zip(self.inputs, state["inputs"]):
            batch_input.restore(saved)
        self._restore_held(state)

    def template(self) -> Any:
        """A structure shaped like one replica's piece (for decoding saved pieces)."""
        return self.inputs[0].template()

    def _held_state(self) -> Dict[str, Any]:
        return {}

    def _restore_held(self, state: Dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        """Closes the batch inputs."""
        for batch_input in self.inputs:
            batch_input.close()


class _Cut(NamedTuple):
    """How a batch of ``rows`` rows is cut into N pieces."""

    rows: int
    sizes: List[int]
    bounds: List[tuple]

    @classmethod
    def of(cls, rows: int, num_pieces: int) -> "_Cut":
        bounds = piece_bounds(rows, num_pieces)
        return cls(rows, [b - a for a, b in bounds], bounds)


class SliceSource(StepSource):
    """Per-batch slicing: each batch gives the pieces ``order`` (indices among ``N``).

    A tensor is cut with one ``split_with_sizes`` call (views, about a microsecond for all
    pieces); other leaves (numpy string arrays) are sliced.
    """

    def __init__(self, batches: BatchInput, num_replicas: int, order: Sequence[int], per_step: int) -> None:
        super().__init__([batches])
        self._next_batch = batches.next
        self._n = num_replicas
        self._order = list(order)
        self._per_step = per_step
        self._one_step = len(self._order) == per_step
        self._fast_order = None if self._order == list(range(num_replicas)) else self._order
        self._cuts: Dict[int, _Cut] = {}
        self._pending: Optional[Any] = None  # a batch whose later pieces are still to come
        self._position = 0  # index into order of the next piece of the pending batch
        self._structure: Optional[_structure.Structure] = None

    @staticmethod
    def _split(leaf: Any, cut: _Cut, order: Optional[Sequence[int]]) -> Sequence[Any]:
        try:  # views; "unsafe" only skips autograd's view tracking, which a batch without grad needs not
            split = leaf.split_with_sizes if leaf.requires_grad else leaf.unsafe_split_with_sizes
            parts: Sequence[Any] = split(cut.sizes)
        except (AttributeError, RuntimeError):  # numpy string arrays; a leaf with other row counts
            parts = [leaf[a:b] for a, b in cut.bounds]
        return parts if order is None else [parts[k] for k in order]

    def _cut(self, leaf: Any) -> _Cut:
        rows = leaf.shape[0]
        cut = self._cuts.get(rows)
        if cut is None:
            cut = self._cuts[rows] = _Cut.of(rows, self._n)
        return cut

    def _pieces(self, batch: Any, order: Optional[Sequence[int]]) -> List[Any]:
        """The pieces ``order`` of ``batch`` (all N, in order, for None)."""
        structure = self._structure
        if structure is None:
            structure = self._structure = _structure.Structure(batch)
        if structure.kind == "leaf":
            return list(self._split(batch, self._cut(batch), order))
        leaves = structure.flatten(batch)
        cut = self._cut(leaves[0])
        columns = [self._split(leaf, cut, order) for leaf in leaves]
        if structure.kind == "tuple":
            return list(zip(*columns))
        return [structure.pack(list(piece)) for piece in zip(*columns)]

    def next_step(self) -> Optional[List[Any]]:
        if self._one_step:
            batch = self._next_batch()
            return None if batch is END else self._pieces(batch, self._fast_order)
        if self._pending is None:
            batch = self._next_batch()
            if batch is END:
                return None
            self._pending, self._position = batch, 0
        start = self._position
        step = self._pieces(self._pending, self._order[start:start + self._per_step])
        self._position = start + self._per_step
        if self._position >= len(self._order):
            self._pending = None
        return step

    def _held_state(self) -> Dict[str, Any]:
        return {"pending": _encode(self._pending), "position": self._position}

    def _restore_held(self, state: Dict[str, Any]) -> None:
        self._pending = _decode(state["pending"], self.template())
        self._position = int(state["position"])


class StreamSource(StepSource):
    """Stream rebatch: the rows cut into pieces of ``sizes`` in a cycle, ``R`` per step."""

    def __init__(self, batches: BatchInput, sizes: Sequence[int], per_step: int) -> None:
        super().__init__([batches])
        self._next_batch = batches.next
        self._sizes = list(sizes)
        self._per_step = per_step
        self._cycle = 0  # index into sizes of the next piece
        self._rows: Optional[Any] = None  # the current batch
        self._offset = 0
        self._count = 0
        self._done = False

    def _take(self, size: int) -> Any:
        """The next piece of ``size`` rows (fewer at the end); MISSING once the rows ran out."""
        parts: List[Any] = []
        need = size
        while not self._done and (need > 0 or not parts):
            if self._rows is None:
                batch = self._next_batch()
                if batch is END:
                    self._done = True
                    break
                self._rows, self._offset, self._count = batch, 0, _structure.num_rows(batch)
            take = min(need, self._count - self._offset)
            parts.append(_structure.slice_rows(self._rows, self._offset, self._offset + take))
            self._offset += take
            need -= take
            if self._offset >= self._count:
                self._rows = None
        if not parts:
            return MISSING
        piece = parts[0] if len(parts) == 1 else _structure.concat_rows(parts)
        if size > 0 and _structure.num_rows(piece) == 0:
            return MISSING
        return piece

    def next_step(self) -> Optional[List[Any]]:
        step = []
        for _ in range(self._per_step):
            step.append(self._take(self._sizes[self._cycle]))
            self._cycle = (self._cycle + 1) % len(self._sizes)
        return None if all(p is MISSING for p in step) else step

    def _held_state(self) -> Dict[str, Any]:
        rest = None if self._rows is None else _structure.slice_rows(self._rows, self._offset, self._count)
        return {"rows": _encode(rest), "cycle": self._cycle, "done": self._done}

    def _restore_held(self, state: Dict[str, Any]) -> None:
        self._rows = _decode(state["rows"], self.template())
        self._offset = 0
        self._count = 0 if self._rows is None else _structure.num_rows(self._rows)
        self._cycle, self._done = int(state["cycle"]), bool(state["done"])


class DealSource(StepSource):
    """Consecutive elements dealt to the ``R`` replicas in turn (per-replica batches as they are)."""

    def __init__(self, batches: BatchInput, per_step: int) -> None:
        super().__init__([batches])
        self._next_batch = batches.next
        self._per_step = per_step
        self._done = False

    def next_step(self) -> Optional[List[Any]]:
        step: List[Any] = []
        for _ in range(self._per_step):
            batch = MISSING if self._done else self._next_batch()
            if batch is END:
                self._done, batch = True, MISSING
            step.append(batch)
        return None if step[0] is MISSING else step

    def _held_state(self) -> Dict[str, Any]:
        return {"done": self._done}

    def _restore_held(self, state: Dict[str, Any]) -> None:
        self._done = bool(state["done"])


class PerReplicaSource(StepSource):
    """One input per replica (``InputReplicationMode.PER_REPLICA``): one element of each per step."""

    def next_step(self) -> Optional[List[Any]]:
        step = [batch_input.next() for batch_input in self.inputs]
        step = [MISSING if b is END else b for b in step]
        return None if all(b is MISSING for b in step) else step

    def template(self) -> Any:
        for batch_input in self.inputs:
            found = batch_input.template()
            if found is not None:
                return found
        return None


def has_rank_zero_leaf(spec: Any) -> bool:
    """True when some leaf of an element spec is a scalar (an unbatched dataset)."""
    return any(leaf.shape is not None and len(leaf.shape) == 0 for leaf in nest.flatten(spec))
