"""Child: the benchmark pipelines with tf.data (run in the TensorFlow environment)."""

import glob
import os

import numpy as np
import tensorflow as tf

from _spec import BATCH, FEATURES, SIZES
from _timing import main


def cheap(x):
    return tf.cast(x, tf.float32) * 2 + 1


def moderate(x):
    m = tf.reshape(tf.sin(tf.cast(x, tf.float32) + tf.range(4096, dtype=tf.float32)), (64, 64))
    return tf.reduce_sum(tf.matmul(m, m))


def decode(record):
    return tf.io.decode_raw(record, tf.float32)


def builders(data_dir):
    n = SIZES
    x = np.random.randn(n["batch"], FEATURES).astype(np.float32)
    y = np.arange(n["batch"], dtype=np.int64)
    files = sorted(glob.glob(os.path.join(data_dir, "*.tfrecord")))
    autotune = tf.data.AUTOTUNE
    return {
        "batch": lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH),
        "shuffle_batch": lambda: tf.data.Dataset.from_tensor_slices((x, y)).shuffle(
            n["shuffle_batch"], seed=0).batch(BATCH),
        "cheap_map": lambda: tf.data.Dataset.range(n["cheap_map"]).map(cheap).batch(BATCH).prefetch(autotune),
        "moderate_map": lambda: tf.data.Dataset.range(n["moderate_map"]).map(
            moderate, num_parallel_calls=autotune).batch(BATCH).prefetch(autotune),
        "tfrecord": lambda: tf.data.TFRecordDataset(files).map(decode).batch(BATCH).prefetch(autotune),
        "tfrecord_read": lambda: tf.data.TFRecordDataset(files).batch(BATCH),
    }


if __name__ == "__main__":
    main(builders, ["batch", "shuffle_batch", "cheap_map", "moderate_map", "tfrecord"])
