"""``distribute.coordinator``: scheduling functions onto the workers of a ParameterServerStrategy."""

from distribute.coordinator.cluster_coordinator import ClusterCoordinator
from distribute.coordinator.per_worker import PerWorkerDataset, PerWorkerDistributedIterator
from distribute.coordinator.remote_value import PerWorkerValue, RemoteValue, RemoteValueStatus
from distribute.coordinator.server import Server

__all__ = ["ClusterCoordinator", "PerWorkerDataset", "PerWorkerDistributedIterator", "PerWorkerValue",
           "RemoteValue", "RemoteValueStatus", "Server"]
