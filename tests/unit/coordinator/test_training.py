"""Asynchronous training through the coordinator: dense models, embeddings, optimizer state on the ps."""

from __future__ import annotations

import torch

import distribute
from distribute.coordinator import ClusterCoordinator
from distribute.experimental.partitioners import FixedShardsPartitioner


def _regression(ctx):
    torch.manual_seed(ctx.input_pipeline_id)
    x = torch.randn(256, 4)
    return distribute.data.Dataset.from_tensor_slices((x, x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]))
                                                      ).repeat().batch(32)


def test_a_sharded_model_trains_with_momentum(cluster):
    strategy = cluster.strategy(FixedShardsPartitioner(2))
    coordinator = ClusterCoordinator(strategy)
    with strategy.scope():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        optimizer = distribute.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)  # async: stale reads
    iterator = iter(coordinator.create_per_worker_dataset(_regression))

    @distribute.function
    def step(it):
        def replica_fn(x, y):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            return loss
        return strategy.run(replica_fn, args=next(it))

    losses = [coordinator.schedule(step, args=(iterator,)) for _ in range(150)]
    coordinator.join()
    first, last = float(losses[0].fetch()), sum(float(r.fetch()) for r in losses[-10:]) / 10
    assert last < first / 5
    stores = [cluster.store(i) for i in range(2)]
    assert any(opt.state for s in stores for v in s._vars.values() for opt in v.optimizers.values())


def test_an_embedding_step_moves_only_the_rows_it_uses(cluster):
    strategy = cluster.strategy(FixedShardsPartitioner(2))
    coordinator = ClusterCoordinator(strategy)
    with strategy.scope():
        table = torch.nn.Embedding(20_000, 16)
        optimizer = distribute.optim.SGD(table.parameters(), lr=0.5)
    before = table.weight.read_value().clone()

    @distribute.function
    def step(ids):
        optimizer.zero_grad()
        table(ids).sum().backward()
        optimizer.step()

    stores = [cluster.store(i) for i in range(2)]
    moved_out = sum(s.bytes_out for s in stores)
    moved_in = sum(s.bytes_in for s in stores)
    ids = torch.tensor([3, 3, 15_000, 7])
    coordinator.schedule(step, args=(ids,))
    coordinator.join()
    row_bytes = 3 * 16 * 4
    assert sum(s.bytes_out for s in stores) - moved_out == row_bytes
    assert sum(s.bytes_in for s in stores) - moved_in <= row_bytes + 3 * 8 + 64  # rows, ids
    after = table.weight.read_value()
    changed = (after != before).any(1).nonzero().flatten().tolist()
    assert changed == [3, 7, 15_000]
    assert torch.allclose(after[3], before[3] - 0.5 * 2)  # looked up twice: gradient 2


def test_a_learning_rate_change_on_the_coordinator_reaches_the_ps(cluster):
    strategy = cluster.strategy()
    coordinator = ClusterCoordinator(strategy)
    with strategy.scope():
        w = distribute.Variable(torch.zeros(2))
        optimizer = distribute.optim.SGD([w], lr=1.0)

    @distribute.function
    def step(lr):
        optimizer.param_groups[0]["lr"] = lr
        optimizer.zero_grad()
        w.sum().backward()
        optimizer.step()

    coordinator.schedule(step, args=(1.0,))
    coordinator.join()
    coordinator.schedule(step, args=(0.25,))
    coordinator.join()
    assert w.numpy().tolist() == [-1.25, -1.25]
