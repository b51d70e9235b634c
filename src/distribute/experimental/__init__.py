"""The ``distribute.experimental`` namespace (the ``tf.distribute.experimental`` names)."""

from distribute._core.replica_context import ValueContext
from distribute.collectives.cross_device_ops import (CollectiveCommunication, CommunicationImplementation,
                                                     CommunicationOptions)
from distribute.experimental import coordinator, partitioners
from distribute.strategies.central_storage import CentralStorageStrategy
from distribute.strategies.multi_worker_mirrored import (
    ExperimentalMultiWorkerMirroredStrategy as MultiWorkerMirroredStrategy)
from distribute.strategies.parameter_server import ParameterServerStrategy

__all__ = [
    "CentralStorageStrategy", "CollectiveCommunication", "CommunicationImplementation",
    "CommunicationOptions", "MultiWorkerMirroredStrategy", "ParameterServerStrategy", "ValueContext",
    "coordinator", "partitioners",
]
