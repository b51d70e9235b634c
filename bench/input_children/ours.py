"""Child: distribute.data pipelines, plain and distributed over MirroredStrategy(2 logical CPUs)."""

import torch

import distribute
from distribute.data import AUTOTUNE, Dataset, Options

from _spec import FEATURES, REPLICAS
from _timing import main, maker

STRATEGY = distribute.MirroredStrategy([f"CPU:{i}" for i in range(REPLICAS)])


def cheap(x):
    return x.to(torch.float32) * 2 + 1


def per_element():
    options = Options()
    options.experimental_optimization.map_vectorization = False
    return options


def pipeline(name, n, batch):
    if name == "cheap_map":
        return Dataset.range(n).map(cheap).batch(batch).prefetch(AUTOTUNE)
    if name == "per_element":
        return Dataset.range(n).map(cheap).batch(batch).prefetch(AUTOTUNE).with_options(per_element())
    if name == "vectorized":
        return Dataset.range(n).batch(batch).map(cheap)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, FEATURES, generator=generator)
    y = torch.arange(n)
    return Dataset.from_tensor_slices((x, y)).batch(batch)


if __name__ == "__main__":
    torch.set_num_threads(2)
    main(maker(STRATEGY, pipeline))
