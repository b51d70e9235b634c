"""distribute and plain torch: strategy.run overhead and MLP training throughput.

Prints one JSON line: {"run_us": {case: us}, "train_eps": {case: examples/s}}.
"""

import time

import torch

import distribute
from _mlp import BATCH, STEPS, WARMUP, make_batches, main, medians, time_us

FN_CASES = ["torch_direct", "default", "one_device", "mirrored_1", "mirrored_2", "mirrored_2_reduce"]
TRAIN_CASES = ["torch_single", "torch_halves", "mirrored_2", "central_storage_2"]


def run_overhead(seconds, repeats):
    x = torch.tensor(1.0)
    fn = lambda v: v + 1.0  # noqa: E731
    strategies = {
        "default": distribute.get_strategy(),
        "one_device": distribute.OneDeviceStrategy("cpu"),
        "mirrored_1": distribute.MirroredStrategy(["CPU:0"]),
        "mirrored_2": distribute.MirroredStrategy(["CPU:0", "CPU:1"]),
    }
    m2 = strategies["mirrored_2"]
    calls = {"torch_direct": lambda: fn(x)}
    for name, s in strategies.items():
        calls[name] = (lambda s=s: s.run(fn, args=(x,)))
    calls["mirrored_2_reduce"] = lambda: m2.reduce("SUM", m2.run(fn, args=(x,)), axis=None)
    samples = {name: [] for name in FN_CASES}
    for _ in range(repeats):  # round-robin, so background load hits every case alike
        for name in FN_CASES:
            samples[name].append(time_us(calls[name], seconds, 200, 200))
    return {name: sorted(v)[len(v) // 2] for name, v in samples.items()}


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                               torch.nn.ReLU(), torch.nn.Linear(512, 10))


def train_torch_single(batches, pieces=1):
    """Plain torch; with ``pieces`` > 1 the batch goes through forward and backward in that many
    consecutive slices before the one optimizer step (the compute floor of replicas run in turn)."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")

    def step(x, y):
        opt.zero_grad()
        for xs, ys in zip(x.chunk(pieces), y.chunk(pieces)):
            loss = loss_fn(model(xs), ys) / BATCH
            loss.backward()
        opt.step()
        return loss
    return _throughput(lambda i: step(*batches[i % len(batches)]))


def train_strategy(strategy, batches):
    with strategy.scope():
        model = _model()
        opt = distribute.optim.SGD(model.parameters(), lr=0.01)
    n = strategy.num_replicas_in_sync
    per = BATCH // n
    split = [strategy.experimental_distribute_values_from_function(
        lambda ctx, x=x, y=y: (x[ctx.replica_id_in_sync_group * per:(ctx.replica_id_in_sync_group + 1) * per],
                               y[ctx.replica_id_in_sync_group * per:(ctx.replica_id_in_sync_group + 1) * per]))
        for x, y in batches]
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")

    def replica_step(inputs):
        x, y = inputs
        opt.zero_grad()
        loss = distribute.nn.compute_average_loss(loss_fn(model(x), y), global_batch_size=BATCH)
        loss.backward()
        opt.step()
        return loss
    return _throughput(lambda i: strategy.run(replica_step, args=(split[i % len(split)],)))


def _throughput(step):
    for i in range(WARMUP):
        step(i)
    start = time.perf_counter()
    for i in range(STEPS):
        step(i)
    return STEPS * BATCH / (time.perf_counter() - start)


def training(repeats):
    batches = make_batches()
    runners = {
        "torch_single": lambda: train_torch_single(batches),
        "torch_halves": lambda: train_torch_single(batches, pieces=2),
        "mirrored_2": lambda: train_strategy(distribute.MirroredStrategy(["CPU:0", "CPU:1"]), batches),
        "central_storage_2": lambda: train_strategy(
            distribute.experimental.CentralStorageStrategy(["CPU:0", "CPU:1"]), batches),
    }
    return medians(runners, TRAIN_CASES, repeats)




if __name__ == "__main__":
    main(run_overhead, training)
