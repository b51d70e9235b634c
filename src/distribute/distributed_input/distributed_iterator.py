"""The iterator of distributed datasets: one step of per-replica batches per ``next()``.

Each step, the worker's step source gives ``R`` pieces, one per local replica. When the data
runs out in the middle of a step, the iterator either gives the replicas without data an
**empty batch** (zero rows, the feature dimensions of the data kept) or ends, following the
partial-batch rules of TensorFlow:

* ``get_next()`` and ``next()`` handle partial steps when the strategy enables it
  (``experimental_enable_get_next_as_optional``), the data is not infinite, and either the
  per-replica element spec is not fully static or there are several workers. Otherwise a step
  that cannot give every replica a batch ends the iteration.
* ``get_next_as_optional()`` always handles partial steps (except for infinite data).
* With several workers, every step first agrees with the other workers on whether any of them
  still has data (the strategy's ``_any_worker_has_data``): all workers then end on the same step,
  and a worker whose data ended gives its replicas empty batches until then.

The position (the batch input's state, rows or pieces held back, steps prefetched onto
devices) is saved by :meth:`state_dict` as plain data and tensors.
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Deque, Dict, List, Optional as Opt, Tuple

import torch

from distribute._core import context
from distribute._core.values import PerReplica
from distribute.data import Optional
from distribute.data import _structure
from distribute.distributed_input.device_prefetch import DevicePlacer
from distribute.distributed_input.element_spec import empty_from_spec, per_replica_spec
from distribute.distributed_input.input_workers import InputWorkers
from distribute.distributed_input.interfaces import DistributedIterator
from distribute.distributed_input.rebatch import MISSING, StepSource
from distribute.errors import InvalidArgumentError, OutOfRangeError

__all__ = ["StepIterator", "check_outside_replica_fn"]

STATE_FORMAT = "distribute.DistributedIterator/1"
_INSIDE_RUN = ("next(iterator) should be called from outside of replica_fn. e.g. "
               "strategy.run(replica_fn, args=(next(iterator),))")


def check_outside_replica_fn() -> None:
    """Raises the TensorFlow error when called inside ``strategy.run``'s function."""
    mode = context.current_mode()
    if mode is not None and mode.cross_replica is None and mode.replica_context is not None \
            and mode.replica_context is not context.default_replica_context():
        raise ValueError(_INSIDE_RUN)


class StepIterator(DistributedIterator):
    """Iterates the steps of a :class:`StepSource`, placing each replica's batch on its device."""

    def __init__(self, source: StepSource, workers: InputWorkers, element_spec: Callable[[], Any],
                 replica_spec: Any, partial: bool, infinite: bool, placer: DevicePlacer) -> None:
        self._source = source
        self._workers = workers
        self._num_local = workers.num_local_replicas
        self._element_spec_fn = element_spec  # computed on request (an iterable's is read from it)
        self._replica_spec = replica_spec  # one replica's element spec (for empty batches)
        self._partial = partial
        self._infinite = infinite
        self._agree = workers.num_workers > 1
        self._placer = placer
        self._done = False
        self._template: Any = None  # a real piece seen before (shape of empty batches)
        self._structure: Opt[_structure.Structure] = None
        self._restored: Deque[List[Any]] = collections.deque()
        self._launched: Deque[Tuple[List[Any], Any]] = collections.deque()

    # ------------------------------------------------------------------ public API
    @property
    def element_spec(self) -> Any:
        """The structure of ``PerReplicaSpec`` (or ``TensorSpec`` with one replica) of the elements."""
        return self._element_spec_fn()

    def __next__(self) -> Any:
        check_outside_replica_fn()
        step = self._step(self._partial)
        if step is None:
            raise StopIteration
        return self._pack(step)

    def get_next(self) -> Any:
        """The next element; raises :class:`~distribute.errors.OutOfRangeError` at the end."""
        check_outside_replica_fn()
        step = self._step(self._partial)
        if step is None:
            raise OutOfRangeError("End of sequence")
        return self._pack(step)

    def get_next_as_optional(self) -> Optional:
        """The next element in an :class:`~distribute.data.Optional`, empty at the end.

        Partial steps are always completed with empty batches (except for infinite data).
        """
        check_outside_replica_fn()
        step = self._step(not self._infinite)
        if step is None:
            return Optional.empty(self._known_spec())
        value = self._pack(step)
        specs = [_structure.spec_of(piece) for piece in step]
        return Optional(value, per_replica_spec(specs))

    def state_dict(self) -> Dict[str, Any]:
        """The position as plain data and tensors (batches held back or prefetched included).

        Example:
            >>> state = it.state_dict()
            >>> again = iter(dist); again.load_state_dict(state)   # continues like ``it``
        """
        ahead = [host for host, _ in self._launched] + list(self._restored)
        return {
            "format": STATE_FORMAT, "layout": self._layout(), "done": self._done,
            "source": self._source.state(),
            "ahead": [[_structure.encode(piece) for piece in step] for step in ahead],
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues from a position saved by :meth:`state_dict` of the same distributed dataset."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise InvalidArgumentError(
                f"Expected a state made by DistributedIterator.state_dict() (format {STATE_FORMAT!r}), "
                f"received {type(state).__name__} with format "
                f"{state.get('format') if isinstance(state, dict) else None!r}.")
        if list(state["layout"]) != self._layout():
            raise InvalidArgumentError(
                f"The state was saved by worker {state['layout'][1]} of {state['layout'][0]} with "
                f"{state['layout'][2]} local replicas; this iterator is worker {self._layout()[1]} of "
                f"{self._layout()[0]} with {self._layout()[2]}. Restore each worker's own state into "
                "the same strategy layout.")
        self._source.restore(state["source"])
        template = self._source.template()
        self._restored = collections.deque(
            [_structure.decode(piece, template) for piece in step] for step in state["ahead"])
        self._launched.clear()
        self._done = bool(state["done"])

    def close(self) -> None:
        """Stops the input pipeline's threads and releases its files."""
        self._source.close()
        self._done = True

    def __repr__(self) -> str:
        return f"<distribute.DistributedIterator {self._workers!r}>"

    # ------------------------------------------------------------------ steps
    def _known_spec(self) -> Any:
        try:
            return self._element_spec_fn()
        except TypeError:  # a one-shot iterable: its spec cannot be read without consuming it
            return None

    def _layout(self) -> List[int]:
        return [self._workers.num_workers, self._workers.worker_index, self._num_local]

    def _step(self, partial: bool) -> Opt[List[Any]]:
        if not self._placer.needed:
            return self._host_step(partial)
        while len(self._launched) <= self._placer.buffer_size:
            host = self._host_step(partial)
            if host is None:
                break
            self._launched.append((host, self._placer.launch(host)))
        if not self._launched:
            return None
        return self._placer.finish(self._launched.popleft()[1])

    def _host_step(self, partial: bool) -> Opt[List[Any]]:
        if self._restored:
            return self._restored.popleft()
        if self._done:
            return None
        step = self._source.next_step()
        if self._agree and partial:
            if not self._workers.any_worker_has_data(step is not None):
                self._done = True
                return None
            if step is None:
                step = [MISSING] * self._num_local
        elif step is None:
            self._done = True
            return None
        for piece in step:
            if piece is MISSING:
                if not partial:
                    self._done = True
                    return None
                return self._fill(step)
        self._template = step[0]
        return step

    def _fill(self, step: List[Any]) -> List[Any]:
        template = next((p for p in step if p is not MISSING), self._template)
        if template is not None:
            self._template = template
        if template is None and self._replica_spec is None:
            return [torch.empty(0) if p is MISSING else p for p in step]
        return [empty_from_spec(self._replica_spec, template) if p is MISSING else p for p in step]

    def _pack(self, step: List[Any]) -> Any:
        if self._num_local == 1:
            return step[0]
        structure = self._structure
        if structure is None:
            structure = self._structure = _structure.Structure(step[0])
        if structure.kind == "leaf":
            return PerReplica(step)
        if structure.kind == "tuple":
            return tuple([PerReplica(column) for column in zip(*step)])
        flats = [structure.flatten(piece) for piece in step]
        return structure.pack([PerReplica(column) for column in zip(*flats)])
