"""Moving each replica's batch onto its device, ahead of the consumer.

On the host CPU a replica's batch is already where it is used: placement is the identity and
nothing is buffered. On CUDA, a step's host pieces are pinned and copied to each replica's
device on a side stream of that device, ``experimental_per_replica_buffer_size`` steps ahead
of the consumer, so the copy of the next batch overlaps the compute of the current one. When a
step is handed out, the device's current stream waits for its copy (no host synchronisation)
and each tensor is marked as used by that stream so its memory is not reused too early.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import torch

from distribute._base import nest

__all__ = ["DevicePlacer"]


def _leaves(element: Any) -> List[Any]:
    return nest.flatten(element) if nest.is_nested(element) else [element]


def _map(fn: Any, element: Any) -> Any:
    return nest.map_structure(fn, element) if nest.is_nested(element) else fn(element)


class _Launched:
    """A step whose copies were started on side streams."""

    __slots__ = ("pieces", "events")

    def __init__(self, pieces: List[Any], events: List[Optional[torch.cuda.Event]]) -> None:
        self.pieces = pieces
        self.events = events


class DevicePlacer:
    """Places the pieces of a step on the replicas' devices.

    Example:
        >>> placer = DevicePlacer([torch.device("cpu")] * 2, fetch_to_device=True, buffer_size=1)
        >>> placer.needed
        False
    """

    def __init__(self, devices: Sequence[torch.device], fetch_to_device: bool, buffer_size: int) -> None:
        self.devices = list(devices)
        self.needed = fetch_to_device and any(d.type != "cpu" for d in self.devices)
        self.buffer_size = buffer_size if self.needed else 0
        self._streams: List[Optional[Any]] = [None] * len(self.devices)

    def _copy(self, value: Any, device: torch.device, non_blocking: bool) -> Any:
        if not isinstance(value, torch.Tensor) or value.device == device:
            return value
        if non_blocking and value.device.type == "cpu" and not value.is_pinned():
            value = value.pin_memory()
        return value.to(device, non_blocking=non_blocking)

    def _side_stream(self, index: int) -> Any:
        if self._streams[index] is None:
            self._streams[index] = torch.cuda.Stream(device=self.devices[index])
        return self._streams[index]

    def launch(self, step: List[Any]) -> _Launched:
        """Starts the copies of ``step`` on side streams; :meth:`finish` hands it out."""
        pieces: List[Any] = []
        events: List[Optional[torch.cuda.Event]] = []
        for index, (piece, device) in enumerate(zip(step, self.devices)):
            if device.type != "cuda":
                pieces.append(_map(lambda v, d=device: self._copy(v, d, False), piece))
                events.append(None)
                continue
            stream = self._side_stream(index)
            with torch.cuda.stream(stream):
                pieces.append(_map(lambda v, d=device: self._copy(v, d, True), piece))
                event = torch.cuda.Event()
                event.record(stream)
            events.append(event)
        return _Launched(pieces, events)

    def finish(self, launched: _Launched) -> List[Any]:
        """Makes each device's current stream wait for the copies of a launched step."""
        for piece, device, event in zip(launched.pieces, self.devices, launched.events):
            if event is None:
                continue
            current = torch.cuda.current_stream(device)
            current.wait_event(event)
            for leaf in _leaves(piece):
                if isinstance(leaf, torch.Tensor) and leaf.is_cuda:
                    leaf.record_stream(current)
        return launched.pieces
