"""An optimizer step of parameter-server variables: gradients go to the tasks that hold them.

``distribute.optim``'s ``step()`` calls :func:`remote_step` when its parameters live on
parameter servers. Each ``ps`` task gets one ``Apply`` call with the dense gradients of its
variables and one ``ApplyRows`` call per embedding shard looked up; the calls run in parallel
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
    dense: Dict[Tuple[int, str], Tuple[Any, List[int], List[torch.Tensor]]] = {}
    calls: List[Callable[[], Any]] = []
    with _Disable():
        for group in optimizer.param_groups:
            spec = describe_optimizer(optimizer, group, key)
            for param in group["params"]:
                if not issubclass(type(param), RemoteVariable):
                    continue
                for shard, kind, payload in param._gradients():
                    client = shard._conns.ps(shard._ps)
                    if kind == "dense":
                        entry = dense.setdefault((shard._ps, id(group)), (client, [], []))
                        entry[1].append(shard._var_id)
                        entry[2].append(payload.detach())
                    else:
                        ids, rows = payload
                        calls.append(client.call_async("ApplyRows", {"id": shard._var_id, "opt": spec},
                                                       [ids, rows.detach()]))
            for (ps, group_id), (client, ids, grads) in list(dense.items()):
                if group_id == id(group):
                    calls.append(client.call_async("Apply", {"ids": ids, "opt": spec}, grads))
                    del dense[(ps, group_id)]
    for wait in calls:
        wait()
    return loss
