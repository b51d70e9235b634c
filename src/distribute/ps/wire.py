"""The typed wire format of parameter-server traffic: a JSON header, then raw buffers.

Every message between the coordinator, the workers and the parameter servers is::

    b"DSTW" | header length (4 bytes, big-endian) | header (JSON) | buffer 0 | buffer 1 | ...

The header holds the call's fields (``meta``) and, for each buffer, its kind: a tensor with
its dtype and shape (raw bytes in native order), or opaque bytes. Decoding reads JSON and
raw bytes only; no code runs. Python objects (a scheduled function and its arguments) travel
as a pickle inside a ``bytes`` buffer, with every tensor they hold taken out as a raw buffer,
and are only unpickled by :func:`loads` on a connection whose peer has proved the job secret
(see ``distribute.ps.rpc``).
"""

from __future__ import annotations

import io
import json
import pickle
import struct
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from distribute.errors import DataLossError

__all__ = ["Message", "decode", "dumps", "encode", "loads", "tensor_dtype"]

MAGIC = b"DSTW"
_LENGTH = struct.Struct(">I")

_DTYPES: Dict[str, torch.dtype] = {
    name: getattr(torch, name) for name in (
        "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
        "complex64", "complex128")
}
_NAMES = {dtype: name for name, dtype in _DTYPES.items()}

Buffer = Union[torch.Tensor, bytes]
Message = Tuple[Dict[str, Any], List[Buffer]]


def tensor_dtype(name: str) -> torch.dtype:
    """The torch dtype a header names; ``DataLossError`` for a name this format does not carry."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise DataLossError(f"A message names the dtype {name!r}, which the wire format does not carry "
                            f"(expected one of {sorted(_DTYPES)}).") from None


def _raw(tensor: torch.Tensor) -> memoryview:
    with torch._C.DisableTorchFunctionSubclass():
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        return memoryview(flat.view(torch.uint8).numpy())


def encode(meta: Dict[str, Any], buffers: Sequence[Buffer] = ()) -> bytes:
    """One message: ``meta`` (JSON-able) and ``buffers`` (tensors or bytes).

    Example:
        >>> meta, bufs = decode(encode({"op": "read"}, [torch.ones(2)]))
        >>> meta["op"], bufs[0].tolist()
        ('read', [1.0, 1.0])
    """
    described, payloads = [], []
    for buffer in buffers:
        if isinstance(buffer, torch.Tensor):
            if buffer.dtype not in _NAMES:
                raise TypeError(f"Expected a tensor of one of the dtypes {sorted(_DTYPES)}, received "
                                f"{buffer.dtype}.")
            data = _raw(buffer)
            described.append({"k": "t", "d": _NAMES[buffer.dtype], "s": list(buffer.shape), "n": data.nbytes})
        else:
            data = memoryview(buffer)
            described.append({"k": "b", "n": data.nbytes})
        payloads.append(data)
    header = json.dumps({"meta": meta, "buffers": described}, separators=(",", ":")).encode()
    out = io.BytesIO()
    out.write(MAGIC + _LENGTH.pack(len(header)) + header)
    for data in payloads:
        out.write(data)
    return out.getvalue()


def decode(data: bytes) -> Message:
    """Reads a message written by :func:`encode`; ``DataLossError`` if it is malformed."""
    if data[:4] != MAGIC or len(data) < 8:
        raise DataLossError(f"Not a distribute message (it starts with {bytes(data[:8])!r}).")
    (length,) = _LENGTH.unpack_from(data, 4)
    try:
        header = json.loads(bytes(data[8:8 + length]))
        meta, described = header["meta"], header["buffers"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DataLossError(f"A message's header is not valid: {exc}.") from None
    offset, buffers = 8 + length, []
    view = memoryview(data)
    for entry in described:
        size = int(entry["n"])
        if offset + size > len(data):
            raise DataLossError(f"A message is truncated: it announces {size} more bytes at offset {offset} "
                                f"of {len(data)}.")
        chunk = view[offset:offset + size]
        offset += size
        buffers.append(_tensor(chunk, entry) if entry["k"] == "t" else bytes(chunk))
    return meta, buffers


def _tensor(chunk: memoryview, entry: Dict[str, Any]) -> torch.Tensor:
    dtype, shape = tensor_dtype(entry["d"]), [int(s) for s in entry["s"]]
    if chunk.nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    raw = torch.frombuffer(bytearray(chunk), dtype=torch.uint8)
    return raw.view(dtype).reshape(shape)


# -- Python objects, with their tensors as raw buffers ------------------------------------------

Persist = Callable[[Any], Optional[tuple]]
Resolve = Callable[[tuple], Any]


def _pickler_class() -> type:
    import cloudpickle  # the ``ps`` extra; imported when a closure first travels

    class _Pickler(cloudpickle.CloudPickler):  # type: ignore[misc, name-defined]
        def __init__(self, file: io.BytesIO, persist: Persist) -> None:
            super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
            self._persist = persist
            self.tensors: List[torch.Tensor] = []

        def persistent_id(self, obj: Any) -> Any:
            ref = self._persist(obj)
            if ref is not None:
                return ("r", ref)
            if isinstance(obj, torch.Tensor) and type(obj) in (torch.Tensor, torch.nn.Parameter):
                self.tensors.append(obj)
                return ("t", len(self.tensors) - 1, isinstance(obj, torch.nn.Parameter), obj.requires_grad)
            return None

    return _Pickler


def dumps(obj: Any, persist: Persist = lambda obj: None) -> Tuple[bytes, List[torch.Tensor]]:
    """Pickles ``obj`` by value; returns the pickle and the tensors it holds (sent as raw buffers).

    ``persist(obj)`` may return a tuple naming an object the receiver already has (a variable on
    a parameter server, a per-worker iterator); it then travels as that name.
    """
    file = io.BytesIO()
    pickler = _pickler_class()(file, persist)
    pickler.dump(obj)
    return file.getvalue(), pickler.tensors


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, tensors: Sequence[torch.Tensor], resolve: Resolve) -> None:
        super().__init__(file)
        self._tensors = tensors
        self._resolve = resolve

    def persistent_load(self, pid: Any) -> Any:
        if pid[0] == "r":
            return self._resolve(tuple(pid[1]))
        tensor = self._tensors[pid[1]]
        if pid[2]:
            return torch.nn.Parameter(tensor, requires_grad=pid[3])
        return tensor.requires_grad_(pid[3]) if pid[3] and tensor.is_floating_point() else tensor


def loads(blob: bytes, tensors: Sequence[torch.Tensor], resolve: Resolve) -> Any:
    """Unpickles what :func:`dumps` wrote. Only for messages from a peer that proved the job secret."""
    return _Unpickler(io.BytesIO(blob), tensors, resolve).load()
