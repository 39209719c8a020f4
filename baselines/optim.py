"""Adam without ``torch._dynamo``: the same arithmetic as ``torch.optim.Adam`` on the CPU.

Every ``torch.optim`` optimiser imports ``torch._dynamo`` (the compiler's front end) on its
first ``step`` or ``add_param_group``: about a second of every training process's start-up,
for a compiler that CPU training here never uses. :class:`Adam` runs the arithmetic of
``torch.optim.Adam``'s default CPU path (the single-tensor loop of ``torch/optim/adam.py``:
``lerp_`` of the first moment, ``mul_``/``addcmul_`` of the second, bias corrections in
Python floats, ``addcdiv_``) operation for operation, so that parameters after any number of
steps are bit-identical to ``torch.optim.Adam(params, lr, betas, eps, weight_decay)``
(a test runs both side by side), and its ``state_dict`` has ``torch.optim.Adam``'s layout, so
checkpoints move between the two. It covers what the baselines use: one parameter group,
real parameters, L2 weight decay; not ``amsgrad``, ``maximize``, ``capturable``,
``differentiable``, ``foreach`` or ``fused`` (use ``torch.optim.Adam`` for those).

:func:`adam` is the Tianshou optimiser factory of it, used by every Tianshou baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from tianshou.algorithm.optim import TorchOptimizerFactory

__all__ = ["Adam", "adam"]

#: ``torch.optim.Adam``'s ``param_groups`` entries besides the parameters, as it saves them.
_FIXED = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
          "differentiable": False, "fused": None, "decoupled_weight_decay": False}


class Adam:
    """``torch.optim.Adam``'s CPU arithmetic without its import of ``torch._dynamo``.

    Args:
        params: The parameters (tensors), or a list of one dict with ``"params"`` and options.
        lr: Learning rate.
        betas: Coefficients of the running averages of the gradient and its square.
        eps: Added to the denominator.
        weight_decay: L2 penalty (added to the gradient, as ``torch.optim.Adam`` does).

    Raises:
        ValueError: A hyper-parameter out of range, no parameters, or several groups.
    """

    def __init__(self, params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
                 lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0) -> None:
        items = list(params)
        options: dict[str, Any] = {}
        if items and isinstance(items[0], dict):
            if len(items) != 1:
                raise ValueError("Adam takes one parameter group (use torch.optim.Adam for more)")
            options = {k: v for k, v in items[0].items() if k != "params"}
            items = list(items[0]["params"])
        if not items:
            raise ValueError("Adam got an empty parameter list")
        group = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                 **_FIXED, **options}
        if not 0.0 <= float(group["lr"]):
            raise ValueError(f"invalid learning rate: {group['lr']}")
        if not 0.0 <= float(group["eps"]):
            raise ValueError(f"invalid epsilon: {group['eps']}")
        if not all(0.0 <= float(b) < 1.0 for b in group["betas"]):
            raise ValueError(f"invalid betas: {group['betas']}")
        if not 0.0 <= float(group["weight_decay"]):
            raise ValueError(f"invalid weight_decay: {group['weight_decay']}")
        unsupported = sorted(k for k, v in _FIXED.items() if group[k] != v)
        if unsupported:
            raise ValueError(f"Adam does not support {', '.join(unsupported)} "
                             "(use torch.optim.Adam)")
        for p in items:
            if not isinstance(p, torch.Tensor) or torch.is_complex(p):
                raise ValueError("Adam takes real tensors")
        group["params"] = items
        self.param_groups: list[dict[str, Any]] = [group]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}
        self.defaults = {k: v for k, v in group.items() if k != "params"}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (``None``, or zeros in place with ``set_to_none=False``)."""
        for p in self.param_groups[0]["params"]:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_().zero_()

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adam update of every parameter that has a gradient; returns ``closure()``."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        group = self.param_groups[0]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        for param in group["params"]:
            if param.grad is None:
                continue
            if param.grad.is_sparse:
                raise RuntimeError("Adam does not support sparse gradients")
            state = self.state.get(param)
            if state is None:  # as torch.optim.Adam._init_group
                state = self.state[param] = {
                    "step": torch.tensor(0.0, dtype=torch.get_default_dtype()),
                    "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
                }
            grad, exp_avg, exp_avg_sq, step_t = (param.grad, state["exp_avg"],
                                                 state["exp_avg_sq"], state["step"])
            # torch/optim/adam.py, _single_tensor_adam, the non-capturable branch
            step_t += 1
            if weight_decay != 0:
                grad = grad.add(param, alpha=weight_decay)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step = step_t.item()
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2**0.5
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)
        return loss

    def state_dict(self) -> dict[str, Any]:
        """The state in ``torch.optim.Adam``'s layout (parameters as their indices)."""
        group = self.param_groups[0]
        index = {id(p): i for i, p in enumerate(group["params"])}
        return {"state": {index[id(p)]: dict(s) for p, s in self.state.items()},
                "param_groups": [{**{k: v for k, v in group.items() if k != "params"},
                                  "params": list(range(len(group["params"])))}]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state saved by this class or by ``torch.optim.Adam`` (one group).

        Raises:
            ValueError: The saved groups do not match the parameters.
        """
        groups = state_dict["param_groups"]
        params = self.param_groups[0]["params"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(params):
            raise ValueError("loaded state dict does not match this optimiser's parameters")
        saved = groups[0]
        position = {pid: i for i, pid in enumerate(saved["params"])}
        self.state = {}
        for pid, slots in state_dict["state"].items():
            p = params[position[pid]]
            self.state[p] = {k: (v.clone() if k == "step" else
                                 v.to(dtype=p.dtype, device=p.device).clone())
                             for k, v in slots.items()}
        options = {k: (tuple(v) if k == "betas" else v) for k, v in saved.items()
                   if k != "params"}
        self.param_groups[0].update(options)


def adam(lr: float, **kwargs: Any) -> TorchOptimizerFactory:
    """Tianshou's optimiser factory of :class:`Adam` (in place of ``AdamOptimizerFactory``)."""
    return TorchOptimizerFactory(Adam, lr=lr, **kwargs)
