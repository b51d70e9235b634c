"""The ``distribute.experimental`` namespace (the ``tf.distribute.experimental`` names)."""

from distribute._core.replica_context import ValueContext
from distribute.collectives.cross_device_ops import (CollectiveCommunication, CommunicationImplementation,
                                                     CommunicationOptions)
from distribute.strategies.central_storage import CentralStorageStrategy
from distribute.strategies.multi_worker_mirrored import (
    ExperimentalMultiWorkerMirroredStrategy as MultiWorkerMirroredStrategy)

__all__ = [
    "CentralStorageStrategy", "CollectiveCommunication", "CommunicationImplementation",
    "CommunicationOptions", "MultiWorkerMirroredStrategy", "ValueContext",
]
