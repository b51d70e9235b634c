"""The parameter store: dense and row updates with torch.optim's optimizers, state beside the variable."""

from __future__ import annotations

import pytest
import torch

from distribute.errors import InvalidArgumentError, NotFoundError
from distribute.ps.optimizer_spec import build_optimizer, describe_optimizer
from distribute.ps.ps_service import ParameterStore


def _store(value):
    store = ParameterStore("ps:0")
    store._create({"id": 0, "name": "v", "trainable": True}, [value.clone()])
    return store


def _spec(cls, **hp):
    opt = cls([torch.nn.Parameter(torch.zeros(1))], **hp)
    return describe_optimizer(opt, opt.param_groups[0], "key")


@pytest.mark.parametrize("cls, hp", [(torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                                     (torch.optim.Adam, {"lr": 0.01}),
                                     (torch.optim.Adagrad, {"lr": 0.1, "initial_accumulator_value": 0.1})])
def test_dense_updates_match_the_optimizer_run_locally(cls, hp):
    start, grads = torch.randn(4, 3), [torch.randn(4, 3) for _ in range(3)]
    store = _store(start)
    local = torch.nn.Parameter(start.clone())
    opt = cls([local], **hp)
    for grad in grads:
        store._apply({"ids": [0], "opt": _spec(cls, **hp)}, [grad])
        local.grad = grad
        opt.step()
    assert torch.allclose(store._vars[0].tensor.detach(), local.detach())


@pytest.mark.parametrize("cls, hp", [(torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                                     (torch.optim.Adagrad, {"lr": 0.1, "initial_accumulator_value": 0.1})])
def test_row_updates_touch_only_their_rows_and_match_a_dense_step_on_them(cls, hp):
    start = torch.randn(6, 2)
    store = _store(start)
    ids, rows = torch.tensor([1, 4]), torch.randn(2, 2)
    for _ in range(2):
        store._apply({"ids": [], "rows": [0], "opt": _spec(cls, **hp)}, [ids, rows])
    after = store._vars[0].tensor.detach()
    untouched = torch.tensor([0, 2, 3, 5])
    assert torch.equal(after[untouched], start[untouched])
    local = torch.nn.Parameter(start[ids].clone())
    opt = cls([local], **hp)
    for _ in range(2):
        local.grad = rows
        opt.step()
    assert torch.allclose(after[ids], local.detach())


def test_reads_and_assigns_and_stats():
    store = _store(torch.zeros(3))
    store._assign({"id": 0, "op": "add"}, [torch.ones(3)])
    assert store._read({"ids": [0]}, [])[1][0].tolist() == [1.0, 1.0, 1.0]
    assert store._read_rows({"id": 0}, [torch.tensor([2])])[1][0].tolist() == [1.0]
    assert store._stats({}, [])[0]["variables"] == 1
    with pytest.raises(NotFoundError, match="holds no variable 5"):
        store._read({"ids": [5]}, [])


def test_only_torch_optim_classes_are_built():
    with pytest.raises(InvalidArgumentError, match="not an optimizer class of torch.optim"):
        build_optimizer({"key": "k", "cls": "os.system", "hp": {}}, [torch.nn.Parameter(torch.ones(1))])

    class Mine(torch.optim.SGD):
        pass

    opt = Mine([torch.nn.Parameter(torch.ones(1))], lr=0.1)
    with pytest.raises(InvalidArgumentError, match="torch.optim's optimizers"):
        describe_optimizer(opt, opt.param_groups[0], "k")
