"""The partitioners of ``tf.distribute.experimental.partitioners``: TF's observed shard counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distribute._base.tensor_spec import string
from distribute.errors import InvalidArgumentError
from distribute.ps.partitioners import (FixedShardsPartitioner, MaxSizePartitioner, MinSizePartitioner,
                                        Partitioner, check_partitions, shard_sizes)

F32 = torch.float32


# -- FixedShardsPartitioner ------------------------------------------------------------------------

@pytest.mark.parametrize("num_shards, shape, expected", [
    (2, (10, 3), [2, 1]),      # spec 10.6 and TF's test
    (2, (1, 3), [1, 1]),       # never more shards than rows
    (3, (2, 4), [2, 1]),
    (2, (5, 2), [2, 1]),       # the (5, 2) embedding of spec 12
    (4, (7,), [4]),
    (2, (6, 2, 3), [2, 1, 1]),
    (1, (100, 100), [1, 1]),
    (5, (0, 3), [1, 1]),       # an empty variable: one shard
])
def test_fixed_shards(num_shards, shape, expected):
    assert FixedShardsPartitioner(num_shards)(shape, F32) == expected
    assert FixedShardsPartitioner(num_shards=num_shards)(torch.Size(shape), torch.int8) == expected
    assert FixedShardsPartitioner(num_shards)(list(shape), "string") == expected


def test_fixed_shards_along_another_axis():
    assert FixedShardsPartitioner(2)((10, 3), F32, axis=1) == [1, 2]
    assert FixedShardsPartitioner(4)((10, 3), F32, axis=-1) == [1, 3]


# -- MinSizePartitioner ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, shape, dtype, expected", [
    ({"min_shard_bytes": 4, "max_shards": 2}, (6, 1), F32, [2, 1]),    # spec 10.6, TF's test
    ({"min_shard_bytes": 4, "max_shards": 10}, (6, 1), F32, [6, 1]),   # spec 10.6, TF's test
    ({"min_shard_bytes": 10, "max_shards": 10}, (6, 1), F32, [3, 1]),  # 24 bytes / 10: ceil 3
    ({"min_shard_bytes": 24, "max_shards": 10}, (6, 1), F32, [1, 1]),
    ({"min_shard_bytes": 23, "max_shards": 10}, (6, 1), F32, [2, 1]),
    ({"min_shard_bytes": 1, "max_shards": 100}, (6, 4), F32, [6, 1]),  # capped by the rows
    ({"min_shard_bytes": 8, "max_shards": 100}, (6, 1), torch.float64, [6, 1]),
    ({"min_shard_bytes": 8, "max_shards": 100}, (6, 1), torch.float16, [2, 1]),
    ({"min_shard_bytes": 16, "max_shards": 100}, (6, 1), "string", [6, 1]),
    ({"min_shard_bytes": 32, "max_shards": 100}, (6, 1), string, [3, 1]),
    ({"min_shard_bytes": 4, "max_shards": 100, "bytes_per_string": 4}, (6, 1), "string", [6, 1]),
    ({"min_shard_bytes": 12, "max_shards": 100, "bytes_per_string": 4}, (6, 1), "string", [2, 1]),
    ({"min_shard_bytes": 4, "max_shards": 10}, (0, 3), F32, [1, 1]),
])
def test_min_size(kwargs, shape, dtype, expected):
    assert MinSizePartitioner(**kwargs)(shape, dtype) == expected


def test_min_size_defaults():
    # 256 KiB and at most one shard: nothing is split by default.
    assert MinSizePartitioner()((1 << 20, 64), F32) == [1, 1]
    # A 1024 x 1024 float32 variable is 4 MiB: 16 shards of 256 KiB when allowed.
    assert MinSizePartitioner(max_shards=16)((1024, 1024), F32) == [16, 1]
    assert MinSizePartitioner(max_shards=100)((1024, 1024), F32) == [16, 1]
    assert MinSizePartitioner(max_shards=8)((1024, 1024), F32) == [8, 1]
    assert MinSizePartitioner(max_shards=100)((1024, 1025), F32) == [17, 1]  # rounded up


def test_min_size_along_another_axis():
    assert MinSizePartitioner(min_shard_bytes=4, max_shards=10)((1, 6), F32, axis=1) == [1, 6]


# -- MaxSizePartitioner ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, shape, dtype, expected", [
    ({"max_shard_bytes": 4}, (6, 1), F32, [6, 1]),                 # spec 10.6, TF's test
    ({"max_shard_bytes": 8}, (6, 1), F32, [3, 1]),                 # spec 10.6
    ({"max_shard_bytes": 4, "max_shards": 2}, (6, 1), F32, [2, 1]),  # spec 10.6, TF's test
    ({"max_shard_bytes": 1024}, (6, 1), F32, [1, 1]),              # TF's test
    ({"max_shard_bytes": 7}, (6, 1), F32, [6, 1]),                 # 1 row of 4 bytes per shard
    ({"max_shard_bytes": 12}, (6, 1), F32, [2, 1]),
    ({"max_shard_bytes": 20}, (6, 1), F32, [2, 1]),                # 5 rows, then 1
    ({"max_shard_bytes": 1}, (6, 3), F32, [6, 1]),                 # a row above the limit: alone
    ({"max_shard_bytes": 24}, (10, 3), F32, [5, 1]),               # rows of 12 bytes, 2 per shard
    ({"max_shard_bytes": 24, "max_shards": 10}, (10, 3), F32, [5, 1]),
    ({"max_shard_bytes": 16}, (6, 1), "string", [6, 1]),
    ({"max_shard_bytes": 32}, (6, 1), "string", [3, 1]),
    ({"max_shard_bytes": 8, "bytes_per_string": 4}, (6, 1), "string", [3, 1]),
    ({"max_shard_bytes": 8}, (6, 1), torch.int8, [1, 1]),
    ({"max_shard_bytes": 8.5}, (6, 1), F32, [3, 1]),
    ({"max_shard_bytes": 4}, (0, 3), F32, [1, 1]),                 # empty: one shard
    ({"max_shard_bytes": 4}, (6, 0), F32, [1, 1]),
])
def test_max_size(kwargs, shape, dtype, expected):
    assert MaxSizePartitioner(**kwargs)(shape, dtype) == expected


def test_max_size_large_table_uses_exact_arithmetic():
    # A 10M x 64 float32 table (2.56 GB) in shards of at most 64 MiB - 1.
    rows, cols = 10_000_000, 64
    got = MaxSizePartitioner(max_shard_bytes=(64 << 20) - 1)((rows, cols), F32)
    rows_per_shard = ((64 << 20) - 1) // (cols * 4)
    assert got == [-(-rows // rows_per_shard), 1] == [39, 1]


def test_max_size_along_another_axis():
    assert MaxSizePartitioner(max_shard_bytes=8)((1, 6), F32, axis=1) == [1, 3]


# -- what every partitioner accepts and refuses ------------------------------------------------------

PARTITIONERS = [FixedShardsPartitioner(2), MinSizePartitioner(4, 10), MaxSizePartitioner(8)]


@pytest.mark.parametrize("partitioner", PARTITIONERS, ids=repr)
def test_shapes_of_every_kind(partitioner):
    for shape in [(6, 1), [6, 1], torch.Size([6, 1]), (np.int64(6), np.int32(1))]:
        result = partitioner(shape, F32)
        assert len(result) == 2 and result[1] == 1 and result[0] >= 1
        assert all(type(n) is int for n in result)
    assert isinstance(partitioner, Partitioner)


@pytest.mark.parametrize("partitioner", PARTITIONERS, ids=repr)
@pytest.mark.parametrize("shape, error, match", [
    ((), InvalidArgumentError, "rank-0 variable is never partitioned"),
    ((3, -1), InvalidArgumentError, "ints >= 0"),
    ((3.0, 1), TypeError, "received \\(3.0, 1\\)"),
    ((True, 1), TypeError, "shape must be"),
    ("6,1", TypeError, "shape must be"),
    (6, TypeError, "received 6"),
    (None, TypeError, "received None"),
])
def test_bad_shapes(partitioner, shape, error, match):
    with pytest.raises(error, match=match):
        partitioner(shape, F32)


@pytest.mark.parametrize("partitioner", PARTITIONERS, ids=repr)
def test_bad_axis_and_dtype(partitioner):
    with pytest.raises(InvalidArgumentError, match=r"axis must be an int in \[-2, 2\); received 2"):
        partitioner((6, 1), F32, axis=2)
    with pytest.raises(InvalidArgumentError, match="received -3"):
        partitioner((6, 1), F32, axis=-3)
    with pytest.raises(TypeError, match="axis must be"):
        partitioner((6, 1), F32, axis=0.0)
    with pytest.raises(TypeError, match="Expected a dtype"):
        partitioner((6, 1), object())


def test_other_dtype_spellings():
    assert MaxSizePartitioner(8)((6, 1), "float32") == [3, 1]
    assert MaxSizePartitioner(8)((6, 1), np.float64) == [6, 1]
    assert MinSizePartitioner(4, 10)((6, 1), torch.bool) == [2, 1]


# -- constructor arguments ---------------------------------------------------------------------------

@pytest.mark.parametrize("make, error, match", [
    (lambda: FixedShardsPartitioner(0), InvalidArgumentError, "num_shards must be an int >= 1; received 0"),
    (lambda: FixedShardsPartitioner(-2), InvalidArgumentError, "received -2"),
    (lambda: FixedShardsPartitioner(2.0), TypeError, "num_shards must be an int >= 1; received 2.0"),
    (lambda: FixedShardsPartitioner(True), TypeError, "received True"),
    (lambda: FixedShardsPartitioner(None), TypeError, "received None"),
    (lambda: MinSizePartitioner(min_shard_bytes=0), InvalidArgumentError, "min_shard_bytes must be a number"),
    (lambda: MinSizePartitioner(min_shard_bytes=-1), InvalidArgumentError, "received -1"),
    (lambda: MinSizePartitioner(min_shard_bytes=float("nan")), InvalidArgumentError, "received nan"),
    (lambda: MinSizePartitioner(min_shard_bytes="4"), TypeError, "received '4'"),
    (lambda: MinSizePartitioner(max_shards=0), InvalidArgumentError, "max_shards must be an int >= 1"),
    (lambda: MinSizePartitioner(max_shards=None), TypeError, "max_shards must be an int >= 1"),
    (lambda: MinSizePartitioner(bytes_per_string=0), InvalidArgumentError, "bytes_per_string must be"),
    (lambda: MaxSizePartitioner(0), InvalidArgumentError, "max_shard_bytes must be a number of bytes >= 1"),
    (lambda: MaxSizePartitioner(-5), InvalidArgumentError, "received -5"),
    (lambda: MaxSizePartitioner(float("inf")), InvalidArgumentError, "received inf"),
    (lambda: MaxSizePartitioner(None), TypeError, "received None"),
    (lambda: MaxSizePartitioner(4, max_shards=0), InvalidArgumentError, "max_shards must be an int >= 1"),
    (lambda: MaxSizePartitioner(4, max_shards=-1), InvalidArgumentError, "received -1"),
    (lambda: MaxSizePartitioner(4, max_shards=2.5), TypeError, "received 2.5"),
    (lambda: MaxSizePartitioner(4, bytes_per_string=0), InvalidArgumentError, "bytes_per_string must be"),
])
def test_invalid_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_invalid_values_are_value_errors():
    for make in (lambda: FixedShardsPartitioner(0), lambda: MinSizePartitioner(0),
                 lambda: MaxSizePartitioner(0)):
        with pytest.raises(ValueError):
            make()


def test_defaults_and_reprs():
    assert repr(FixedShardsPartitioner(3)) == "FixedShardsPartitioner(num_shards=3)"
    assert repr(MinSizePartitioner()) == ("MinSizePartitioner(min_shard_bytes=262144, max_shards=1, "
                                          "bytes_per_string=16)")
    assert repr(MaxSizePartitioner(64)) == ("MaxSizePartitioner(max_shard_bytes=64, max_shards=None, "
                                            "bytes_per_string=16)")


def test_partitioner_is_abstract():
    with pytest.raises(TypeError):
        Partitioner()

    class Halves(Partitioner):
        def __call__(self, shape, dtype, axis=0):
            return [2] + [1] * (len(shape) - 1)

    assert Halves()((4, 4, 4), F32) == [2, 1, 1]


# -- shard_sizes and check_partitions ----------------------------------------------------------------

@pytest.mark.parametrize("rows, n, expected", [
    (5, 2, [3, 2]),            # spec 7.5: part_0 (3, 2), part_1 (2, 2)
    (10, 3, [4, 3, 3]),
    (10, 4, [3, 3, 2, 2]),
    (6, 6, [1] * 6),
    (7, 1, [7]),
    (0, 1, [0]),
    (2, 3, [1, 1, 0]),
])
def test_shard_sizes(rows, n, expected):
    sizes = shard_sizes(rows, n)
    assert sizes == expected and sum(sizes) == rows


@pytest.mark.parametrize("args, error, match", [
    ((-1, 2), InvalidArgumentError, "rows must be an int >= 0; received -1"),
    ((5, 0), InvalidArgumentError, "num_shards must be an int >= 1; received 0"),
    ((5.0, 2), TypeError, "rows must be"),
    ((5, None), TypeError, "num_shards must be"),
])
def test_shard_sizes_errors(args, error, match):
    with pytest.raises(error, match=match):
        shard_sizes(*args)


@pytest.mark.parametrize("partitions, shape, expected", [
    ([2, 1], (5, 2), 2),
    ((2, 1), (5, 2), 2),
    ([8, 1], (5, 2), 5),       # capped at the rows: min(k, shape[0])
    ([1, 1], (5, 2), 1),
    ([3], torch.Size([10]), 3),
    ([np.int64(2), 1, 1], (4, 2, 2), 2),
    ([4, 1], (0, 2), 1),
])
def test_check_partitions(partitions, shape, expected):
    assert check_partitions(partitions, shape) == expected


@pytest.mark.parametrize("partitions", [
    [0, 1], [-1, 1], [2, 2], [1, 2], [2], [2, 1, 1], [], None, 2, "21", [2.0, 1], [True, 1], {2: 1},
])
def test_check_partitions_rejects(partitions):
    with pytest.raises(InvalidArgumentError, match=r"the result must be a list of 2 ints \[k, 1\] with k >= 1") as info:
        check_partitions(partitions, (5, 2))
    assert f"received {partitions!r}" in str(info.value)
    assert "variable_partitioner" in str(info.value)


def test_check_partitions_rejects_rank_0():
    with pytest.raises(InvalidArgumentError, match="rank-0 variable is never partitioned"):
        check_partitions([], ())


def test_every_partitioner_passes_its_own_check():
    shapes = [(1,), (5, 2), (6, 1), (10, 3), (1024, 1024), (3, 4, 5)]
    partitioners = PARTITIONERS + [MinSizePartitioner(1, 7), MaxSizePartitioner(1, 3)]
    for partitioner in partitioners:
        for shape in shapes:
            n = check_partitions(partitioner(shape, F32), shape)
            assert 1 <= n <= shape[0]
            assert sum(shard_sizes(shape[0], n)) == shape[0]
