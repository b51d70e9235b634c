"""The pipelines and iteration modes of bench_input.py, described once for both children.

No torch or TensorFlow import here. Every pipeline yields global batches of ``BATCH`` rows;
each child times, per pipeline, iterating the dataset itself ("plain"), the result of
``experimental_distribute_dataset`` over 2 replicas ("distributed": rebatch 256 -> 2 x 128 and
deal), and ``distribute_datasets_from_function`` with per-replica batches of 128 ("from_function").
"""

BATCH = 256
REPLICAS = 2
FEATURES = 32

SIZES = {
    "cheap_map": 262_144,  # range(N).map(x*2+1).batch(256).prefetch  (spec D1, cheap; ours vectorises it)
    "per_element": 65_536,  # the same with one map call per element (ours: map_vectorization off)
    "vectorized": 1_048_576,  # range(N).batch(256).map(x*2+1)  (spec D2)
    "slices": 1_048_576,  # from_tensor_slices((x[N,32], y[N])).batch(256)
}

MODES = ["plain", "distributed", "from_function"]

DESCRIPTIONS = {
    "cheap_map": "`range(N).map(lambda i: float(i)*2+1).batch(256).prefetch(AUTOTUNE)` (D1 cheap; ours vectorised)",
    "per_element": "the same, one map call per element (ours: `map_vectorization = False`)",
    "vectorized": "`range(N).batch(256).map(lambda b: float(b)*2+1)` (D2, vectorised)",
    "slices": "`from_tensor_slices((x[N,32], y[N])).batch(256)` (tuples)",
}
