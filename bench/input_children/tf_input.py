"""Child: the same pipelines with tf.data, plain and distributed over MirroredStrategy(2 logical CPUs),
iterated eagerly in a Python loop and, for reference, inside a tf.function."""

import numpy as np
import tensorflow as tf

from _spec import FEATURES, REPLICAS
from _timing import main, maker

CPU = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(CPU, [tf.config.LogicalDeviceConfiguration()] * REPLICAS)
STRATEGY = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(REPLICAS)])


def cheap(x):
    return tf.cast(x, tf.float32) * 2 + 1


def pipeline(name, n, batch):
    if name in ("cheap_map", "per_element"):  # tf.data always calls the map per element
        return tf.data.Dataset.range(n).map(cheap).batch(batch).prefetch(tf.data.AUTOTUNE)
    if name == "vectorized":
        return tf.data.Dataset.range(n).batch(batch).map(cheap)
    x = np.random.default_rng(0).standard_normal((n, FEATURES), dtype=np.float32)
    return tf.data.Dataset.from_tensor_slices((x, np.arange(n))).batch(batch)


if __name__ == "__main__":
    main(maker(STRATEGY, pipeline))
