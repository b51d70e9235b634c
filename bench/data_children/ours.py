"""Child: the benchmark pipelines with distribute.data (default options, and per element)."""

import glob
import os

import torch

from _spec import BATCH, FEATURES, SIZES
from _timing import main

from distribute.data import AUTOTUNE, Dataset, Options, TFRecordDataset


def cheap(x):
    return x.float() * 2 + 1


def moderate(x):
    m = torch.sin(x.float() + torch.arange(4096, dtype=torch.float32)).reshape(64, 64)
    return (m @ m).sum()


def decode(record):
    return torch.frombuffer(bytearray(record), dtype=torch.float32)


def _vmap_floor(n):
    """The compute floor of the vectorized moderate map: vmap over index batches, no pipeline."""
    vectorized = torch.func.vmap(moderate)
    for start in range(0, n, BATCH):
        yield vectorized(torch.arange(start, min(start + BATCH, n)))


def _per_element(ds):
    options = Options()
    options.experimental_optimization.map_vectorization = False
    return ds.with_options(options)


def builders(data_dir):
    n = SIZES
    x = torch.randn(n["batch"], FEATURES)
    y = torch.arange(n["batch"])
    files = sorted(glob.glob(os.path.join(data_dir, "*.tfrecord")))
    tfrecord = lambda: TFRecordDataset(files).map(decode).batch(BATCH).prefetch(AUTOTUNE)
    cheap_map = lambda: Dataset.range(n["cheap_map"]).map(cheap).batch(BATCH).prefetch(AUTOTUNE)
    moderate_map = lambda: Dataset.range(n["moderate_map"]).map(moderate, num_parallel_calls=AUTOTUNE).batch(
        BATCH).prefetch(AUTOTUNE)
    return {
        "batch": lambda: Dataset.from_tensor_slices((x, y)).batch(BATCH),
        "shuffle_batch": lambda: Dataset.from_tensor_slices((x, y)).shuffle(
            n["shuffle_batch"], seed=0).batch(BATCH),
        "cheap_map": cheap_map,
        "moderate_map": moderate_map,
        "tfrecord": tfrecord,
        "tfrecord_read": lambda: TFRecordDataset(files).batch(BATCH),
        "cheap_map_per_element": lambda: _per_element(cheap_map()),
        "moderate_map_per_element": lambda: _per_element(moderate_map()),
        "moderate_map_floor": lambda: _vmap_floor(n["moderate_map"]),
    }


if __name__ == "__main__":
    main(builders, ["batch", "shuffle_batch", "cheap_map", "moderate_map", "tfrecord"])
