"""The worker task: runs the functions the coordinator schedules.

Calls: ``Run`` (a batch of closures, run one after another), ``Resource`` (build a per-worker
dataset or iterator). Each closure reads the variables its function uses, once, from their
parameter servers (one call per server, in parallel), then calls the function inside the
worker's ``ParameterServerStrategy`` scope; gradients go back through ``distribute.optim``.
"""

from __future__ import annotations

import inspect
import threading
import traceback
from typing import Any, Dict, List, Optional, Tuple

import torch

from distribute._base.nest import map_structure
from distribute._core.replica_context import InputContext
from distribute._core.variables import Variable
from distribute.errors import FailedPreconditionError, OutOfRangeError, UnavailableError
from distribute.ps import closure_state, wire
from distribute.ps.connections import Connections
from distribute.ps.sharded_variable import ShardedVariable
from distribute.ps.unbuilt_dataset import UnbuiltDataset
from distribute.ps.variables import WorkerVariable, read_variables
from distribute.strategies.parameter_server import ParameterServerExtended, ParameterServerStrategy

__all__ = ["WorkerRuntime"]


class WorkerRuntime:
    """The state of one worker task: its strategy, variable handles, functions and datasets."""

    def __init__(self, cluster: Dict[str, List[str]], index: int, secret: Optional[bytes]) -> None:
        self.task = f"worker:{index}"
        self.index, self.num_workers = index, len(cluster["worker"])
        self._conns = Connections(cluster, secret)
        self.strategy = ParameterServerStrategy._for_worker(cluster, self._conns, index)
        self._variables: Dict[int, WorkerVariable] = {}
        self._sharded: Dict[int, ShardedVariable] = {}
        self._functions: Dict[str, Tuple[Any, List[WorkerVariable], Dict[int, ShardedVariable]]] = {}
        self._resources: Dict[int, Any] = {}
        self._resource_errors: Dict[int, BaseException] = {}
        self._lock = threading.Lock()

    def handlers(self) -> Dict[str, Any]:
        """Method name -> handler, for :class:`distribute.ps.rpc.RpcServer`."""
        return {"Run": self._run, "Resource": self._resource}

    def close(self) -> None:
        """Closes the connections to the parameter servers."""
        self._conns.close()

    # -- names that travel in pickles ---------------------------------------------------
    def _resolver(self, touched: List[WorkerVariable]) -> Any:
        def resolve(ref: Tuple[Any, ...]) -> Any:
            kind = ref[0]
            if kind == "var":
                var = self._variables.get(ref[1])
                if var is None:
                    var = self._variables[ref[1]] = WorkerVariable._remote(self._conns, ref)
                touched.append(var)
                return var
            if kind == "sv":
                return self._sharded_variable(ref)
            if kind == "strategy":
                return self.strategy
            if kind == "pwv":
                return self._resource_of(int(ref[1][self.index]))
            raise ValueError(f"{self.task} received an unknown reference {kind!r}.")
        return resolve

    def _resource_of(self, resource: int) -> Any:
        if resource in self._resources:
            return self._resources[resource]
        error = self._resource_errors.get(resource)
        if error is not None:
            raise error
        raise FailedPreconditionError(f"{self.task} has no per-worker resource {resource}: it was made by another "
                                      "coordinator.")

    def _sharded_variable(self, ref: Tuple[Any, ...]) -> ShardedVariable:
        var = self._sharded.get(ref[1])
        if var is None:
            shards = []
            for shard_ref in ref[4]:
                shard = self._variables.get(shard_ref[1])
                if shard is None:
                    shard = self._variables[shard_ref[1]] = WorkerVariable._remote(self._conns, tuple(shard_ref))
                shards.append(shard)
            var = self._sharded[ref[1]] = ShardedVariable._make(shards, ref[2], ref[3], on_worker=True)
        return var

    def _load(self, blob: bytes, tensors: List[Any], touched: List[WorkerVariable]) -> Any:
        return wire.loads(blob, tensors, self._resolver(touched))

    # -- Run -----------------------------------------------------------------------------
    def _run(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        out_meta: List[Dict[str, Any]] = []
        out: List[wire.Buffer] = []
        position, failed = 0, False
        with self._lock:
            for entry in meta["closures"]:
                taken, position = _slices(entry, buffers, position)
                result: Dict[str, Any]
                blob_and_tensors: List[wire.Buffer]
                if failed:  # an earlier closure of the batch failed: the rest are cancelled
                    result, blob_and_tensors = {"status": "cancelled"}, [b""]
                else:
                    result, blob_and_tensors = self._one(entry, taken)
                    failed = result["status"] in ("error", "unavailable")
                result["n"] = len(blob_and_tensors) - 1
                out_meta.append(result)
                out.extend(blob_and_tensors)
        return {"results": out_meta}, out

    def _one(self, entry: Dict[str, Any], taken: Dict[str, Any]) -> Tuple[Dict[str, Any], List[wire.Buffer]]:
        digest = entry["digest"]
        try:
            if "fn" in taken:
                touched: List[WorkerVariable] = []
                function = self._load(taken["fn"][0], taken["fn"][1], touched)
                self._functions[digest] = (function, touched, {})
            if digest not in self._functions:
                return {"status": "missing"}, [b""]
            function, uses, dense_sharded = self._functions[digest]
            arg_uses: List[WorkerVariable] = []
            args, kwargs = self._load(taken["args"][0], taken["args"][1], arg_uses)
            shards: List[Any] = [s for var in dense_sharded.values() for s in var._shards]
            read_variables(_unique(uses + arg_uses + shards))  # one call per parameter server
            state = closure_state.ClosureState(self.task)
            state.prefetched = set(dense_sharded)
            with closure_state.running(state), self.strategy.scope():
                value = function(*args, **kwargs)
            dense_sharded.update(state.dense_users)
            blob, tensors = wire.dumps(_plain(value))
            return {"status": "ok"}, [blob, *tensors]
        except UnavailableError as exc:  # a parameter server is gone: fatal for the job
            return {"status": "unavailable", "message": str(exc)}, [b""]
        except StopIteration:
            return self._error(OutOfRangeError("End of sequence"))
        except Exception as exc:  # noqa: BLE001 - the user's error goes back to the coordinator
            return self._error(exc)

    def _error(self, exc: BaseException) -> Tuple[Dict[str, Any], List[wire.Buffer]]:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        try:
            blob, tensors = wire.dumps(exc)
        except Exception:  # noqa: BLE001 - an error that does not pickle travels as text
            blob, tensors = wire.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
        return {"status": "error", "traceback": text, "task": self.task}, [blob, *tensors]

    # -- Resource ------------------------------------------------------------------------
    def _resource(self, meta: Dict[str, Any], buffers: List[wire.Buffer]) -> wire.Message:
        resource = int(meta["id"])
        with self._lock:
            try:
                if meta["kind"] == "iterator":
                    self._resources[resource] = iter(self._resource_of(int(meta["dataset"])))
                else:
                    blob = buffers[0]
                    assert isinstance(blob, bytes)
                    self._resources[resource] = self._build(self._load(blob, list(buffers[1:]), []))
            except Exception as exc:  # the closures that use it raise it too
                self._resource_errors[resource] = exc
                raise
        return {}, []

    def _build(self, dataset_fn: Any) -> Any:
        if isinstance(dataset_fn, UnbuiltDataset):
            dataset_fn = dataset_fn.dataset_fn
        if not callable(dataset_fn):
            return dataset_fn  # a dataset that travelled by value
        context = InputContext(num_input_pipelines=self.num_workers, input_pipeline_id=self.index,
                               num_replicas_in_sync=1)
        extended = self.strategy.extended
        assert isinstance(extended, ParameterServerExtended)
        extended._building_dataset = True
        try:
            with self.strategy.scope():
                dataset = dataset_fn(context) if _takes_argument(dataset_fn) else dataset_fn()
        finally:
            extended._building_dataset = False
        return dataset


def _slices(entry: Dict[str, Any], buffers: List[wire.Buffer], position: int) -> Tuple[Dict[str, Any], int]:
    taken: Dict[str, Any] = {}
    for key in ("fn", "args"):
        count = entry.get(key)
        if count is not None:
            taken[key] = (buffers[position], list(buffers[position + 1:position + 1 + count]))
            position += 1 + count
    return taken, position


def _unique(variables: List[WorkerVariable]) -> List[WorkerVariable]:
    seen: Dict[int, WorkerVariable] = {}
    for var in variables:
        seen.setdefault(id(var), var)
    return list(seen.values())


def _plain(value: Any) -> Any:
    def convert(leaf: Any) -> Any:
        if isinstance(leaf, Variable):
            return leaf.read_value().detach()
        if isinstance(leaf, torch.Tensor):
            return leaf.detach()
        return leaf
    return map_structure(convert, value)


def _takes_argument(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)
