"""Worker script: assertions of TensorFlow's multi-worker tests (issue 26) on real worker processes.

Builds the strategy as TF's tests do (``SimpleClusterResolver(..., environment=
TFConfigClusterResolver().environment)``), reads variables inside ``strategy.scope()`` (each
worker seeds torch differently on purpose), and gathers values whose shapes differ across
workers. Prints RESULT lines that test_multi_worker_tf_tests_mp.py compares.
"""

from __future__ import annotations

import time

import torch
from _common import as_list, emit

import distribute
from distribute.cluster_resolver import SimpleClusterResolver, TFConfigClusterResolver
from distribute.collectives.cross_device_ops import CommunicationOptions
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy


def make_strategy() -> MultiWorkerMirroredStrategy:
    tf_config = TFConfigClusterResolver()
    resolver = SimpleClusterResolver(tf_config.cluster_spec(), task_type=tf_config.task_type,
                                     task_id=tf_config.task_id, environment=tf_config.environment)
    emit("resolver", {"environment": resolver.environment, "task": [resolver.task_type, resolver.task_id]})
    return MultiWorkerMirroredStrategy(cluster_resolver=resolver,
                                       communication_options=CommunicationOptions(timeout_seconds=30))


def variables_inside_the_scope(strategy: MultiWorkerMirroredStrategy, rank: int) -> None:
    torch.manual_seed(100 + rank)  # different on purpose: worker 0's values must be everywhere
    before = torch.rand(3)
    with strategy.scope():
        v = distribute.Variable(torch.rand(()), name="v")  # TF's peer-failure test
        first = float(v.numpy())
        data = distribute.Variable(float(rank), name="data")
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
        inside = {"v": first, "v_again": float(v.read_value()), "data": float(data.numpy()),
                  "weight": as_list(model[0].weight.read_value()), "bias2": as_list(model[2].bias.read_value())}
    after = {"v": float(v.numpy()), "weight": as_list(model[0].weight.read_value())}
    own = torch.rand(3)  # this worker's own stream goes on from its last own draw (v's value)
    torch.manual_seed(100 + rank)
    torch.rand(3), torch.rand(())
    emit("variables", {"inside": inside, "after": after, "own_stream": bool(torch.equal(own, torch.rand(3))),
                       "before": as_list(before)})


def gather_mismatches(strategy: MultiWorkerMirroredStrategy, rank: int) -> None:
    ctx = distribute.get_replica_context
    cases = {
        "off_axis": lambda: strategy.gather(strategy.run(lambda: torch.ones(2, 3 + rank)), axis=0),
        "rank": lambda: strategy.gather(strategy.run(lambda: torch.ones(2, 3) if rank == 0 else torch.ones(2)), axis=0),
        "all_gather": lambda: strategy.run(lambda: ctx().all_gather(torch.ones(1, 2 + rank), axis=0)),
    }
    for name, call in cases.items():
        started = time.monotonic()
        try:
            call()
            emit(name, {"type": None})
        except Exception as exc:  # noqa: BLE001 - reported to the test
            emit(name, {"type": type(exc).__name__, "message": str(exc), "elapsed": time.monotonic() - started,
                        "bases": [c.__name__ for c in type(exc).__mro__], "calls": getattr(exc, "calls", None)})
    # the group is still usable, and an uneven gather (sizes differ along the axis) still works
    emit("after", as_list(strategy.gather(strategy.run(lambda: torch.full((rank + 1, 2), float(rank))), axis=0)))


def main() -> None:
    strategy = make_strategy()
    rank = strategy.extended._rank
    variables_inside_the_scope(strategy, rank)
    gather_mismatches(strategy, rank)
    emit("done", True)


if __name__ == "__main__":
    main()
