"""The on-disk format of ``Dataset.save`` / ``Dataset.load`` / ``Dataset.snapshot``.

A saved dataset is a directory:

* ``shard-NNNNN.tfrecord``: TFRecord files (optionally GZIP), one record per element, so
  every record carries a masked CRC-32C that the reader checks (a corrupt record is a
  ``DataLossError``);
* ``manifest.json``, written last: the format name, the element_spec, the compression and,
  per shard, its file name and number of elements (a truncated shard is a ``DataLossError``).

Each file is written to a temporary name and renamed with ``os.replace``, and the manifest
comes last, so an interrupted save never looks complete. Loading runs no code from the
files: an element record is a JSON header (the leaves' shapes and string lengths) followed
by the raw bytes of the leaves; dtypes come from the manifest's element_spec, parsed against
a fixed list of dtype names.
"""

from __future__ import annotations

import collections
import json
import os
import struct
import uuid
from typing import Any, Dict, List, cast

import numpy as np
import torch

from distribute._base import nest
from distribute._base.tensor_spec import TensorSpec, as_dtype, string
from distribute.data._specs import DatasetSpec, NoneTensorSpec
from distribute.errors import DataLossError, InvalidArgumentError, NotFoundError

__all__ = ["FORMAT", "MANIFEST", "decode_element", "encode_element", "read_manifest",
           "shard_name", "spec_from_json", "spec_to_json", "write_atomically"]

FORMAT = "distribute.data.save/1"
MANIFEST = "manifest.json"
_HEADER = struct.Struct("<I")


def shard_name(index: int) -> str:
    """The file name of shard ``index``."""
    return f"shard-{index:05d}.tfrecord"


def _leaf_to_json(spec: Any) -> Dict[str, Any]:
    if isinstance(spec, NoneTensorSpec):
        return {"spec": "none"}
    if isinstance(spec, DatasetSpec):
        raise InvalidArgumentError(
            f"Cannot save a dataset whose elements contain datasets (spec {spec}); flatten them "
            f"first, e.g. with flat_map."
        )
    dtype = "string" if spec.dtype is string else str(spec.dtype).replace("torch.", "")
    return {"spec": "tensor", "dtype": dtype, "shape": None if spec.shape is None else list(spec.shape)}


def spec_to_json(spec: Any) -> Any:
    """An element_spec as JSON data (tuples, namedtuples, dicts of tensor/None specs)."""
    if isinstance(spec, tuple) and nest.is_namedtuple(spec):
        return {"namedtuple": type(spec).__name__, "fields": list(cast(Any, spec)._fields),
                "items": [spec_to_json(s) for s in spec]}
    if isinstance(spec, tuple):
        return {"tuple": [spec_to_json(s) for s in spec]}
    if isinstance(spec, dict):
        if not all(isinstance(k, str) for k in spec):
            raise InvalidArgumentError(f"Cannot save elements with non-string dict keys: {list(spec)}.")
        return {"dict": {k: spec_to_json(v) for k, v in spec.items()}}
    return _leaf_to_json(spec)


def spec_from_json(data: Any) -> Any:
    """The element_spec saved by :func:`spec_to_json`."""
    if "tuple" in data:
        return tuple(spec_from_json(s) for s in data["tuple"])
    if "namedtuple" in data:
        # mypy models namedtuple() only with a literal name; this name comes from the manifest.
        cls = collections.namedtuple(str(data["namedtuple"]), [str(f) for f in data["fields"]])  # type: ignore[misc]
        return cls(*[spec_from_json(s) for s in data["items"]])
    if "dict" in data:
        return {k: spec_from_json(v) for k, v in data["dict"].items()}
    if data.get("spec") == "none":
        return NoneTensorSpec()
    dtype = as_dtype(str(data["dtype"]))
    if not isinstance(dtype, torch.dtype) and dtype is not string:
        raise DataLossError(f"Unknown dtype {data['dtype']!r} in a saved dataset's manifest.")
    shape = data["shape"]
    return TensorSpec(None if shape is None else tuple(shape), dtype)


def _leaf_bytes(leaf: Any, header: List[Any], parts: List[bytes]) -> None:
    if leaf is None:
        header.append(None)
    elif isinstance(leaf, torch.Tensor):
        flat = leaf.detach().cpu().contiguous().reshape(-1)
        header.append(list(leaf.shape))
        parts.append(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    elif isinstance(leaf, bytes):
        header.append({"bytes": len(leaf)})
        parts.append(leaf)
    else:
        values = [bytes(b) for b in leaf.reshape(-1)]
        header.append({"strings": list(leaf.shape), "lengths": [len(b) for b in values]})
        parts.extend(values)


def encode_element(element: Any) -> bytes:
    """One element as a record: JSON header length, header, then the leaves' bytes."""
    header: List[Any] = []
    parts: List[bytes] = []
    for leaf in nest.flatten(element):
        _leaf_bytes(leaf, header, parts)
    text = json.dumps(header, separators=(",", ":")).encode()
    return _HEADER.pack(len(text)) + text + b"".join(parts)


def _decode_leaf(entry: Any, spec: Any, payload: memoryview, at: int) -> tuple:
    if entry is None:
        return None, at
    if isinstance(entry, dict) and "bytes" in entry:
        n = int(entry["bytes"])
        return bytes(payload[at:at + n]), at + n
    if isinstance(entry, dict):
        out = np.empty(len(entry["lengths"]), dtype=object)
        for i, n in enumerate(entry["lengths"]):
            out[i] = bytes(payload[at:at + n])
            at += n
        return out.reshape(entry["strings"]), at
    shape = [int(d) for d in entry]
    dtype = spec.dtype
    n = int(np.prod(shape, dtype=np.int64)) * torch.empty((), dtype=dtype).element_size()
    raw = bytearray(payload[at:at + n])
    if len(raw) != n:
        raise DataLossError("A saved element is shorter than its header says.")
    flat = torch.frombuffer(raw, dtype=torch.uint8) if n else torch.empty(0, dtype=torch.uint8)
    return flat.view(dtype).reshape(shape), at + n


def decode_element(record: bytes, spec: Any) -> Any:
    """The element in ``record`` (made by :func:`encode_element`), packed as ``spec``."""
    try:
        (size,) = _HEADER.unpack_from(record, 0)
        header = json.loads(record[_HEADER.size:_HEADER.size + size])
        specs = nest.flatten(spec)
        payload, at = memoryview(record), _HEADER.size + size
        leaves = []
        for entry, leaf_spec in zip(header, specs):
            leaf, at = _decode_leaf(entry, leaf_spec, payload, at)
            leaves.append(leaf)
    except (struct.error, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise DataLossError(f"A saved element cannot be decoded ({exc}); the files are corrupt.") from exc
    if len(leaves) != len(specs) or at != len(record):
        raise DataLossError("A saved element does not match the saved element_spec; the files are corrupt.")
    return nest.pack_sequence_as(spec, leaves)


def write_atomically(path: str, data: bytes) -> None:
    """Writes ``data`` to a temporary file beside ``path`` and renames it over ``path``."""
    temp = f"{path}.tmp-{uuid.uuid4().hex}"
    with open(temp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, path)


def read_manifest(path: str) -> Dict[str, Any]:
    """The manifest of the saved dataset in directory ``path``."""
    manifest = os.path.join(path, MANIFEST)
    if not os.path.isfile(manifest):
        raise NotFoundError(
            f"No saved dataset at {path!r}: {MANIFEST} is missing (the save did not finish, or "
            f"the path is wrong). Save one with `dataset.save({path!r})`."
        )
    try:
        with open(manifest) as f:
            data = json.load(f)
    except ValueError as exc:
        raise DataLossError(f"The manifest {manifest!r} is corrupt: {exc}.") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DataLossError(f"{manifest!r} is not a manifest of format {FORMAT!r}.")
    return data
