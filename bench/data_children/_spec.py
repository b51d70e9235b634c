"""The pipelines of bench_data.py, described once for every framework's child.

Sizes are chosen so that one timed pass takes about a second in the slowest framework.
Every child builds the same pipeline on the same data: in-memory batching (plain and
shuffled), a cheap per-element map, a moderately expensive per-element map with
``num_parallel_calls=AUTOTUNE``, and TFRecord read + parse. No torch or TF import here.
"""

BATCH = 256
FEATURES = 32  # columns of the in-memory feature matrix
RECORD_FLOATS = 64  # float32 values per TFRecord record (256 bytes)

SIZES = {
    "batch": 262_144,  # from_tensor_slices((x, y)).batch(256)
    "shuffle_batch": 262_144,  # from_tensor_slices((x, y)).shuffle(N).batch(256)
    "cheap_map": 262_144,  # range(N).map(x*2+1).batch(256).prefetch
    "moderate_map": 32_768,  # range(N).map(sum(M @ M), AUTOTUNE).batch(256).prefetch
    "tfrecord": 131_072,  # TFRecordDataset(files).map(decode).batch(256).prefetch
}
TFRECORD_FILES = 4

DESCRIPTIONS = {
    "batch": "`from_tensor_slices((x[N,32], y[N])).batch(256)`",
    "shuffle_batch": "`from_tensor_slices((x, y)).shuffle(N, seed).batch(256)`",
    "cheap_map": "`range(N).map(lambda i: float(i)*2+1).batch(256).prefetch(AUTOTUNE)`",
    "moderate_map": "`range(N).map(f_moderate, num_parallel_calls=AUTOTUNE).batch(256).prefetch(AUTOTUNE)`",
    "tfrecord": "`TFRecordDataset(4 files).map(decode 64 float32).batch(256).prefetch(AUTOTUNE)`",
    "tfrecord_read": "`TFRecordDataset(4 files).batch(256)`; DataLoader: the framing parser, `batch_size=256`",
}
