"""``distribute.experimental.coordinator`` (``tf.distribute.experimental.coordinator``)."""

from distribute.coordinator import ClusterCoordinator, PerWorkerValue, RemoteValue

PerWorkerValues = PerWorkerValue  # TensorFlow's experimental spelling

__all__ = ["ClusterCoordinator", "PerWorkerValue", "PerWorkerValues", "RemoteValue"]
