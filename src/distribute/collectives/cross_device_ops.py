"""CrossDeviceOps: how a strategy reduces and broadcasts values between its local devices.

In one process, replicas' tensors are summed on one device and copied back (``local.py``).
``NcclAllReduce`` uses ``torch.cuda.comm`` (NCCL) when every tensor is on its own GPU, and falls
back to the same reduce-then-copy path otherwise. ``CommunicationOptions`` configures the
collectives of multi-worker strategies.
"""

from __future__ import annotations

import abc
import enum
from typing import Any, List, Optional, Sequence

import torch

from distribute._base.reduce_op import ReduceOp
from distribute._core.reduction import reduce_components
from distribute._core.values import DistributedValues, Mirrored
from distribute._core.distributed_variables import DistributedVariable

__all__ = [
    "CommunicationImplementation", "CommunicationOptions", "CrossDeviceOps", "HierarchicalCopyAllReduce",
    "NcclAllReduce", "ReductionToOneDevice", "destination_devices",
]


class CommunicationImplementation(enum.Enum):
    """Which collective implementation multi-worker strategies use."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation


class CommunicationOptions:
    """Options for collectives: packing, deadline and implementation.

    Example:
        >>> CommunicationOptions(timeout_seconds=30, implementation=CommunicationImplementation.RING)
        CommunicationOptions(bytes_per_pack=0, timeout_seconds=30, implementation=CommunicationImplementation.RING)
    """

    def __init__(self, bytes_per_pack: int = 0, timeout_seconds: Optional[float] = None,
                 implementation: Any = CommunicationImplementation.AUTO) -> None:
        if not isinstance(bytes_per_pack, int) or isinstance(bytes_per_pack, bool) or bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be a non-negative int, received {bytes_per_pack!r}.")
        if timeout_seconds is not None and (not isinstance(timeout_seconds, (int, float)) or timeout_seconds <= 0):
            raise ValueError(f"timeout_seconds must be a positive number or None, received {timeout_seconds!r}.")
        if isinstance(implementation, str) and implementation.upper() in CommunicationImplementation.__members__:
            implementation = CommunicationImplementation[implementation.upper()]
        if not isinstance(implementation, CommunicationImplementation):
            raise ValueError("implementation must be a CommunicationImplementation (AUTO, RING or NCCL), "
                             f"received {implementation!r}.")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def merge(self, options: Optional["CommunicationOptions"]) -> "CommunicationOptions":
        """These options overridden by the non-default fields of ``options``."""
        if options is None:
            return self
        return CommunicationOptions(
            options.bytes_per_pack or self.bytes_per_pack,
            options.timeout_seconds if options.timeout_seconds is not None else self.timeout_seconds,
            options.implementation if options.implementation is not CommunicationImplementation.AUTO
            else self.implementation)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CommunicationOptions) and repr(self) == repr(other)

    def __repr__(self) -> str:
        return (f"CommunicationOptions(bytes_per_pack={self.bytes_per_pack}, timeout_seconds="
                f"{self.timeout_seconds}, implementation={self.implementation})")


def _components(value: Any) -> List[torch.Tensor]:
    if isinstance(value, DistributedValues):  # distributed variables included
        return list(value.values)
    return [value]


_DESTINATION_KINDS = ("a device name such as '/cpu:0', a torch.device, a tensor, a variable, a "
                      "DistributedValues (Mirrored, PerReplica, a distributed variable) or a non-empty "
                      "list of devices")


def destination_devices(destinations: Any) -> List[torch.device]:
    """The devices ``destinations`` names, in order (``reduce_to`` and ``CrossDeviceOps``).

    Raises:
        ValueError: for anything else, or an empty list.
    """
    if isinstance(destinations, DistributedVariable):
        return [c.device for c in destinations._components()]
    if isinstance(destinations, DistributedValues):
        return [torch.as_tensor(v).device for v in destinations.values]
    if isinstance(destinations, torch.Tensor):
        return [destinations.device]
    if isinstance(destinations, (str, torch.device)):
        return [_device(destinations)]
    if isinstance(destinations, (list, tuple)) and destinations and all(
            isinstance(d, (str, torch.device)) for d in destinations):
        return [_device(d) for d in destinations]
    raise ValueError(f"destinations must be {_DESTINATION_KINDS}; received {destinations!r} of type "
                     f"{type(destinations).__name__}.")


def _device(name: Any) -> torch.device:
    if isinstance(name, torch.device):
        return name
    from distribute._core.devices import canonicalize

    return canonicalize(name).torch_device


def _result(tensors: List[torch.Tensor]) -> Any:
    return tensors[0] if len(tensors) == 1 else Mirrored(tensors)


class CrossDeviceOps(abc.ABC):
    """Reduces and broadcasts values between the devices of one process."""

    def reduce(self, reduce_op: Any, per_replica_value: Any, destinations: Any, options: Any = None) -> Any:
        """Reduces ``per_replica_value`` and places a copy on each destination device.

        ``destinations`` is a device name, a ``torch.device``, a tensor, a variable, a
        ``DistributedValues`` (its components' devices) or a list of devices.
        """
        op = ReduceOp.resolve(reduce_op)
        devices = destination_devices(destinations)
        return _result(self.reduce_implementation(op, _components(per_replica_value), devices))

    def batch_reduce(self, reduce_op: Any, value_destination_pairs: Sequence[Any], options: Any = None) -> list:
        """``reduce`` over ``(value, destinations)`` pairs."""
        if not isinstance(value_destination_pairs, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 for p in value_destination_pairs):
            raise ValueError("value_destination_pairs must be a list or tuple of (value, destinations) "
                             f"pairs, received {value_destination_pairs!r}.")
        for _, destinations in value_destination_pairs:
            destination_devices(destinations)
        return [self.reduce(reduce_op, v, d, options) for v, d in value_destination_pairs]

    def broadcast(self, tensor: torch.Tensor, destinations: Any) -> Any:
        """Copies ``tensor`` onto each device of ``destinations`` (the kinds ``reduce`` takes)."""
        return _result(self.broadcast_implementation(tensor, destination_devices(destinations)))

    @abc.abstractmethod
    def reduce_implementation(self, op: ReduceOp, tensors: List[torch.Tensor],
                              destinations: List[torch.device]) -> List[torch.Tensor]:
        """Returns one reduced tensor per destination."""

    def broadcast_implementation(self, tensor: torch.Tensor, destinations: List[torch.device]) -> List[torch.Tensor]:
        """Returns one copy of ``tensor`` per destination."""
        return [tensor.to(d, copy=True) for d in destinations]

    def _sum_gradients(self, grads: List[torch.Tensor], device: torch.device) -> torch.Tensor:
        """One parameter's per-replica gradients summed on ``device`` (an optimizer step).

        The caller releases ``grads`` afterwards, so an implementation may sum into them.
        """
        return self.reduce_implementation(ReduceOp.SUM, grads, [device])[0]


class ReductionToOneDevice(CrossDeviceOps):
    """Sums on one device (the first destination by default), then copies the result out.

    Args:
        reduce_to_device: device name or ``torch.device`` to reduce on.
        accumulation_fn: ``fn(list_of_tensors) -> tensor``; defaults to a sum.
    """

    def __init__(self, reduce_to_device: Any = None, accumulation_fn: Any = None) -> None:
        if accumulation_fn is not None and not callable(accumulation_fn):
            raise TypeError(f"accumulation_fn must be callable, received {accumulation_fn!r}.")
        if reduce_to_device is not None and not isinstance(reduce_to_device, torch.device):
            from distribute._core.devices import canonicalize

            reduce_to_device = canonicalize(reduce_to_device).torch_device
        self._device = reduce_to_device
        self._accumulate = accumulation_fn

    def reduce_implementation(self, op: ReduceOp, tensors: List[torch.Tensor],
                              destinations: List[torch.device]) -> List[torch.Tensor]:
        device = self._device or destinations[0]
        if self._accumulate is not None:
            total = self._accumulate([torch.as_tensor(t).to(device) for t in tensors])
            reduced = total / len(tensors) if op is ReduceOp.MEAN else total
            return [reduced.to(d, copy=True) for d in destinations]
        reduced = reduce_components(op, tensors, None, device)  # a new tensor: the first copy is free
        return [reduced if i == 0 and d == reduced.device else reduced.to(d, copy=True)
                for i, d in enumerate(destinations)]

    def _sum_gradients(self, grads: List[torch.Tensor], device: torch.device) -> torch.Tensor:
        """The sum accumulated into the first gradient (no new buffer), when this class's own
        ``reduce_implementation`` is the one in effect; a subclass's override is always called."""
        own = type(self).reduce_implementation is ReductionToOneDevice.reduce_implementation
        if not own or self._accumulate is not None or (self._device is not None and self._device != device):
            return super()._sum_gradients(grads, device)
        total = grads[0] if grads[0].device == device else grads[0].to(device)
        for g in grads[1:]:
            total.add_(g.to(device))
        return total


class _PackedAllReduce(ReductionToOneDevice):
    def __init__(self, num_packs: int = 1) -> None:
        if not isinstance(num_packs, int) or num_packs < 0:
            raise ValueError(f"num_packs must be a non-negative int, received {num_packs!r}.")
        super().__init__()
        self.num_packs = num_packs


class HierarchicalCopyAllReduce(_PackedAllReduce):
    """Reduce-then-copy in one process; kept for TensorFlow compatibility."""


class NcclAllReduce(_PackedAllReduce):
    """Uses NCCL (``torch.cuda.comm``) when every value is on its own GPU."""

    def reduce_implementation(self, op: ReduceOp, tensors: List[torch.Tensor],
                              destinations: List[torch.device]) -> List[torch.Tensor]:
        tensors = [torch.as_tensor(t) for t in tensors]
        devices = [t.device for t in tensors]
        if all(d.type == "cuda" for d in devices) and len(set(devices)) == len(devices) and \
                tensors[0].is_floating_point():
            import torch.cuda.comm as comm

            total = comm.reduce_add(tensors, destination=destinations[0].index if destinations[0].type == "cuda" else None)
            if op is ReduceOp.MEAN:
                total = total / len(tensors)
            return [total.to(d, copy=True) for d in destinations]
        return super().reduce_implementation(op, tensors, destinations)
