"""Sources and transformations of the input pipeline, one per module.

Each module defines one Dataset node (and its internal iterator); ``Dataset`` methods in
:mod:`distribute.data.dataset` construct them. Modules starting with ``_`` are shared
machinery: random access (the bulk path), vectorization, worker threads, spec probing.
"""

from distribute.data.ops import (  # noqa: F401  (imported so that `ops.<name>` resolves)
    batch,
    cache,
    concatenate,
    enumerate,
    filter,
    flat_map,
    from_generator,
    from_tensor_slices,
    from_tensors,
    from_torch,
    interleave,
    map,
    padded_batch,
    prefetch,
    range,
    repeat,
    shard,
    shuffle,
    skip,
    take,
    unbatch,
    with_options,
    zip,
)
from distribute.data.ops import (  # noqa: F401,E402  (the nodes of issue 18)
    bucket,
    group_by_window,
    ignore_errors,
    random,
    rebatch,
    rejection_resample,
    sample,
    save_load,
    scan,
    snapshot,
    take_while,
    unique,
    window,
)
