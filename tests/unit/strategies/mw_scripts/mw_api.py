"""Worker script: the public behaviour of MultiWorkerMirroredStrategy on a real cluster.

Run by the launcher in every task (TF_CONFIG set); prints RESULT lines that
test_multi_worker_mirrored_mp.py compares between the tasks.
"""

from __future__ import annotations

import torch
from _common import as_list, emit, is_wildcard, listening_addresses

import distribute
from distribute import ReduceOp, VariableAggregation, VariableSynchronization
from distribute.collectives.cross_device_ops import CommunicationOptions
from distribute.strategies.multi_worker_mirrored import MultiWorkerMirroredStrategy


def rid() -> int:
    return int(distribute.get_replica_context().replica_id_in_sync_group)


def identity(strategy: MultiWorkerMirroredStrategy) -> None:
    ext = strategy.extended
    emit("identity", {
        "replicas": strategy.num_replicas_in_sync, "task": [ext.task_type, ext.task_id],
        "devices": list(ext.worker_devices), "should_checkpoint": ext.should_checkpoint,
        "should_save_summary": ext.should_save_summary, "between_graph": ext.experimental_between_graph,
        "should_init": ext.experimental_should_init, "multi_worker": ext._in_multi_worker_mode(),
        "resolver": type(strategy.cluster_resolver).__name__, "replica_id": int(strategy.run(rid)),
        "input_workers": list(ext._input_workers())})


def reductions(strategy: MultiWorkerMirroredStrategy) -> None:
    value = strategy.run(lambda: torch.tensor(float(rid() + 1)))
    per_example = strategy.run(lambda: torch.arange(1.0, 3.0) if rid() == 0 else torch.tensor([3.0]))
    uneven = strategy.run(lambda: torch.full((rid() + 1,), float(rid())))
    emit("reduce", {
        "sum": as_list(strategy.reduce(ReduceOp.SUM, value, axis=None)),
        "mean": as_list(strategy.reduce("mean", value, axis=None)),
        "sum_axis0": as_list(strategy.reduce("sum", per_example, axis=0)),
        "mean_axis0": as_list(strategy.reduce("mean", per_example, axis=0)),
        "gather": as_list(strategy.gather(uneven, axis=0)),
        "local_results": len(strategy.experimental_local_results(value)),
        "reduce_to": as_list(strategy.extended.reduce_to("sum", distribute.PerReplica([value]), "CPU:0")),
        "batch_reduce_to": as_list(strategy.extended.batch_reduce_to(
            "mean", [(distribute.PerReplica([value]), "CPU:0"), (distribute.PerReplica([value * 10]), "CPU:0")])),
    })


def replica_collectives(strategy: MultiWorkerMirroredStrategy) -> None:
    def step() -> dict:
        ctx = distribute.get_replica_context()
        r = rid()
        nested = {"a": torch.tensor([1.0, 2.0]) * (r + 1), "b": (torch.tensor(r + 1),)}
        merged = ctx.merge_call(lambda s, v: s.reduce("sum", v, axis=None), args=(torch.tensor(r + 10.0),))
        return {"sum": ctx.all_reduce("sum", nested), "mean": ctx.all_reduce(ReduceOp.MEAN, torch.tensor(r + 1)),
                "gather": ctx.all_gather(torch.full((r + 1, 2), float(r)), axis=0), "merge": merged}

    emit("replica", as_list(strategy.run(step)))

    w = torch.tensor(1.0, requires_grad=True)

    def differentiable() -> torch.Tensor:
        ctx = distribute.get_replica_context()
        y = ctx.all_reduce("sum", w * (rid() + 1))
        y.backward()
        g = ctx.all_gather((w * (rid() + 1)).reshape(1), axis=0)
        return y, g

    y, g = strategy.run(differentiable)
    emit("grad_all_reduce", {"value": as_list(y), "grad": as_list(w.grad)})


def variables(strategy: MultiWorkerMirroredStrategy, rank: int) -> None:
    torch.manual_seed(100 + rank)  # different on purpose: worker 0's values must win
    with strategy.scope():
        model = torch.nn.Linear(4, 3)
        v = distribute.Variable(float(rank), name="v")
        on_read = distribute.Variable(0.0, synchronization=VariableSynchronization.ON_READ,
                                      aggregation=VariableAggregation.SUM, name="on_read")
        mean_var = distribute.Variable(0.0, aggregation=VariableAggregation.MEAN, name="mean_var")
    strategy.run(lambda: on_read.assign_add(float(rid() + 1)))
    strategy.run(lambda: mean_var.assign(torch.tensor(float(rid()))))
    emit("variables", {"weight": as_list(model.weight), "bias": as_list(model.bias), "v": float(v.numpy()),
                       "on_read": float(on_read.read_value()), "mean_var": float(mean_var.numpy()),
                       "types": [type(model.weight).__name__, type(on_read).__name__]})


def training(strategy: MultiWorkerMirroredStrategy, rank: int, workers: int) -> None:
    torch.manual_seed(7 + rank)
    with strategy.scope():
        model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
        opt = distribute.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    reference = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    with torch.no_grad():
        for mine, ref in zip(model.parameters(), reference.parameters()):
            ref.copy_(mine.read_value())
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    global_batch = 4 * workers
    local = global_batch // workers

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum") / global_batch
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    losses = []
    for _ in range(5):
        x, y = torch.randn(global_batch, 6, generator=gen), torch.randint(0, 2, (global_batch,), generator=gen)
        part = slice(rank * local, (rank + 1) * local)
        losses.append(float(strategy.reduce("sum", strategy.run(step, args=(x[part], y[part])), axis=None)))
        ref_opt.zero_grad()
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        ref_opt.step()
    pairs = zip(model.parameters(), reference.parameters())
    diff = max(float((a.read_value() - b).detach().abs().max()) for a, b in pairs)
    emit("training", {"max_diff": diff, "losses": losses,
                      "checksum": sum(float(p.read_value().detach().sum()) for p in model.parameters())})


def main() -> None:
    strategy = MultiWorkerMirroredStrategy(communication_options=CommunicationOptions(timeout_seconds=30))
    rank = strategy.extended._rank
    identity(strategy)
    reductions(strategy)
    replica_collectives(strategy)
    variables(strategy, rank)
    training(strategy, rank, strategy.extended._num_workers)
    seed = strategy.extended._agree_on_input_seed(1000 + rank)
    emit("listeners", {"addresses": listening_addresses(),
                       "wildcard": [a for a in listening_addresses() if is_wildcard(a)], "seed": seed})
    emit("done", True)


if __name__ == "__main__":
    main()
