"""An optimizer step of parameter-server variables: gradients go to the tasks that hold them.

``distribute.optim``'s ``step()`` calls :func:`remote_step` when its parameters live on
parameter servers. Each ``ps`` task gets one ``Apply`` call per parameter group with the dense
gradients of its variables and the gradient rows of the embedding shards looked up; the calls run
in parallel
and each task applies the update with the optimizer's class and hyperparameters (its state,
such as momentum, lives beside the variable).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from distribute.ps.optimizer_spec import describe_optimizer
from distribute.ps.variables import RemoteVariable

__all__ = ["remote_step"]

_Disable = torch._C.DisableTorchFunctionSubclass


def remote_step(optimizer: torch.optim.Optimizer, key: str, closure: Optional[Callable[[], Any]] = None) -> Any:
    """Sends the gradients of ``optimizer``'s remote parameters to their parameter servers.

    Args:
        optimizer: the wrapped ``torch.optim`` optimizer (only its class and hyperparameters are used).
        key: names this optimizer's state on the parameter servers.
        closure: re-evaluates the loss first, as ``torch.optim`` allows.
    """
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    calls: List[Callable[[], Any]] = []
    with _Disable():
        for group in optimizer.param_groups:
            spec = describe_optimizer(optimizer, group, key)
            per_ps: Dict[int, Tuple[Any, List[int], List[torch.Tensor], List[int], List[torch.Tensor]]] = {}
            for param in group["params"]:
                if not issubclass(type(param), RemoteVariable):
                    continue
                for shard, kind, payload in param._gradients():
                    entry = per_ps.setdefault(shard._ps, (shard._conns.ps(shard._ps), [], [], [], []))
                    if kind == "dense":
                        entry[1].append(shard._var_id)
                        entry[2].append(payload.detach())
                    else:
                        entry[3].append(shard._var_id)
                        entry[4].extend((payload[0], payload[1].detach()))
            for client, ids, grads, row_ids, rows in per_ps.values():
                calls.append(client.call_async("Apply", {"ids": ids, "rows": row_ids, "opt": spec}, grads + rows))
    for wait in calls:
        wait()
    return loss
