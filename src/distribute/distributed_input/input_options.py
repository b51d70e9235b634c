"""InputOptions and InputReplicationMode: how a strategy places and replicates input.

``InputOptions`` is a namedtuple (as ``tf.distribute.InputOptions``) passed to
``experimental_distribute_dataset`` and ``distribute_datasets_from_function``:

* ``experimental_fetch_to_device`` (``None`` means True): move each replica's batch onto its
  device; False keeps batches on the host CPU.
* ``experimental_replication_mode``: ``PER_WORKER`` (one input pipeline per worker, its
  batches dealt to the worker's replicas) or ``PER_REPLICA`` (``distribute_datasets_from_function``
  only: one pipeline per replica).
* ``experimental_place_dataset_on_device``: with ``PER_REPLICA``, each replica's pipeline
  yields batches already on the replica's device (no prefetch buffer).
* ``experimental_per_replica_buffer_size`` (default 1): batches prefetched onto each device
  ahead of the consumer (on a CUDA side stream); 0 copies synchronously.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple, Optional

__all__ = ["InputOptions", "InputReplicationMode", "check_function_options", "resolve_options"]


class InputReplicationMode(enum.Enum):
    """Whether input pipelines are created once per worker or once per replica.

    Example:
        >>> import distribute
        >>> distribute.InputReplicationMode("PER_REPLICA")
        <InputReplicationMode.PER_REPLICA: 'PER_REPLICA'>
    """

    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


class _Fields(NamedTuple):
    experimental_fetch_to_device: bool = True  # InputOptions turns None into True
    experimental_replication_mode: InputReplicationMode = InputReplicationMode.PER_WORKER
    experimental_place_dataset_on_device: bool = False
    experimental_per_replica_buffer_size: int = 1


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"InputOptions expects `{name}` to be a bool, received {name}={value!r}.")
    return value


def _check_mode(value: Any) -> InputReplicationMode:
    try:
        return InputReplicationMode(value.value if isinstance(value, InputReplicationMode) else value)
    except ValueError:
        raise ValueError(
            "InputOptions expects `experimental_replication_mode` to be "
            "InputReplicationMode.PER_WORKER or PER_REPLICA, received "
            f"experimental_replication_mode={value!r}.") from None


def _check_buffer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            "InputOptions expects `experimental_per_replica_buffer_size` to be an int >= 0 "
            f"(0 disables prefetching), received experimental_per_replica_buffer_size={value!r}.")
    return value


class InputOptions(_Fields):
    """Options for distributed input (a namedtuple; ``None`` fetch-to-device means True).

    Example:
        >>> import distribute
        >>> options = distribute.InputOptions(experimental_fetch_to_device=False)
        >>> options.experimental_per_replica_buffer_size
        1
    """

    __slots__ = ()

    def __new__(cls, experimental_fetch_to_device: Optional[bool] = None,
                experimental_replication_mode: Any = InputReplicationMode.PER_WORKER,
                experimental_place_dataset_on_device: bool = False,
                experimental_per_replica_buffer_size: int = 1) -> "InputOptions":
        fetch = True if experimental_fetch_to_device is None else _check_bool(
            "experimental_fetch_to_device", experimental_fetch_to_device)
        return super().__new__(
            cls, fetch, _check_mode(experimental_replication_mode),
            _check_bool("experimental_place_dataset_on_device", experimental_place_dataset_on_device),
            _check_buffer(experimental_per_replica_buffer_size))


def resolve_options(options: Any) -> InputOptions:
    """``options`` as an ``InputOptions`` (the defaults for ``None``); raises TypeError otherwise."""
    if options is None:
        return InputOptions()
    if not isinstance(options, InputOptions):
        raise TypeError(
            "Expected `options` to be a distribute.InputOptions or None, received "
            f"{options!r} of type {type(options).__name__}. Build one with "
            "distribute.InputOptions(experimental_fetch_to_device=..., ...).")
    return options


def check_function_options(options: InputOptions) -> None:
    """The placement rules of ``distribute_datasets_from_function`` (TensorFlow's texts)."""
    per_replica = options.experimental_replication_mode is InputReplicationMode.PER_REPLICA
    if options.experimental_place_dataset_on_device and not per_replica:
        raise ValueError(
            "When `experimental_place_dataset_on_device` is set for dataset placement, you must "
            "also specify `PER_REPLICA` for the replication mode")
    if per_replica and options.experimental_place_dataset_on_device and options.experimental_fetch_to_device:
        raise ValueError(
            "`experimental_place_dataset_on_device` can not be set to True when "
            "experimental_fetch_to_device is True and replication mode is set to `PER_REPLICA`")
