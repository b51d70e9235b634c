"""Child: the torch.utils.data.DataLoader equivalents of the benchmark pipelines.

In-memory data is a TensorDataset read by a DataLoader (shuffle=True for the shuffled
pipeline); maps are a map-style Dataset whose ``__getitem__`` applies the function; TFRecord
files are read by an IterableDataset that parses the framing (it does not verify checksums,
so it does less work than the two readers it is compared with).
"""

import glob
import os
import struct

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset

from _spec import BATCH, FEATURES, SIZES
from _timing import main


def cheap(x):
    return x.float() * 2 + 1


def moderate(x):
    m = torch.sin(x.float() + torch.arange(4096, dtype=torch.float32)).reshape(64, 64)
    return (m @ m).sum()


class Mapped(Dataset):
    def __init__(self, n, fn):
        self.n, self.fn = n, fn

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.fn(torch.tensor(i))


class Records(IterableDataset):
    def __init__(self, files, raw=False):
        self.files, self.raw = files, raw

    def __iter__(self):
        for path in self.files:
            with open(path, "rb") as f:
                data = f.read()
            pos = 0
            while pos < len(data):
                (length,) = struct.unpack_from("<Q", data, pos)
                record = data[pos + 12:pos + 12 + length]
                yield record if self.raw else torch.frombuffer(bytearray(record), dtype=torch.float32)
                pos += 16 + length


def builders(data_dir):
    n = SIZES
    x = torch.randn(n["batch"], FEATURES)
    y = torch.arange(n["batch"])
    files = sorted(glob.glob(os.path.join(data_dir, "*.tfrecord")))
    generator = torch.Generator().manual_seed(0)
    return {
        "batch": lambda: DataLoader(TensorDataset(x, y), batch_size=BATCH),
        "shuffle_batch": lambda: DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True,
                                            generator=generator),
        "cheap_map": lambda: DataLoader(Mapped(n["cheap_map"], cheap), batch_size=BATCH),
        "moderate_map": lambda: DataLoader(Mapped(n["moderate_map"], moderate), batch_size=BATCH),
        "moderate_map_2_workers": lambda: DataLoader(Mapped(n["moderate_map"], moderate), batch_size=BATCH,
                                                     num_workers=2, persistent_workers=False),
        "tfrecord": lambda: DataLoader(Records(files), batch_size=BATCH),
        "tfrecord_read": lambda: DataLoader(Records(files, raw=True), batch_size=BATCH),
    }


if __name__ == "__main__":
    main(builders, ["batch", "shuffle_batch", "cheap_map", "moderate_map", "tfrecord"])
