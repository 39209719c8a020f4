"""Differentiable projections onto the per-category risk polytopes (torch).

:class:`AlphaProjection` is the torch twin of :func:`tsg_envs.polytope.alpha_project` (Shah et
al., AAAI 2020, Section "α-projection"): y = y0 + α (s - y0) with α the largest value in [0, 1]
keeping A_ub y ≤ b_ub, shrunk by the same relative 1e-6. It holds every category's ``A_ub``,
``b_ub`` and centre as buffers and gathers them from the category one-hot *in the observation*,
so it works inside Tianshou's target actor, which is called without ``info``. It computes in
float64 whatever the input dtype and returns the input dtype.

:class:`L2Projection` is the OptLayer route the paper argues against: the Euclidean projection
argmin_x ‖x - s‖² s.t. A_ub x ≤ b_ub, Σx = 1, as a differentiable QP through cvxpylayers
(optional extra ``tsg-envs[l2]``; imported only when built).

Shapes: B batch, T teams, K = M + T inequality rows, C categories, O observation size.
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from tsg_envs.polytope import ALPHA_SHRINK

__all__ = [
    "AlphaProjection",
    "L2Projection",
    "RadialSquash",
    "projection_distance",
    "categories_from_obs",
    "violation_torch",
]


def categories_from_obs(obs_BO: torch.Tensor, category: slice) -> tuple[torch.Tensor, torch.Tensor]:
    """The waiting category of each observation and whether there is one.

    Args:
        obs_BO: (B, O) observations.
        category: ``obs_layout["category"]``, the one-hot's slice.

    Returns:
        ``(cat_B, valid_B)``: the argmax of the one-hot (0 where it is all zero, i.e. after the
        day's last passenger) and a bool mask of the rows that have a waiting passenger.
    """
    onehot_BC = obs_BO[..., category]
    valid_B = onehot_BC.max(dim=-1).values > 0.5
    cat_B = onehot_BC.argmax(dim=-1)
    return cat_B, valid_B


def violation_torch(y_BT: torch.Tensor, a_BKT: torch.Tensor, b_BK: torch.Tensor) -> torch.Tensor:
    """SPEC violation measure max(0, max_i(a_i·y - b_i), |Σy - 1|, max(-y)), in float64."""
    y = y_BT.double()
    rows = torch.einsum("bkt,bt->bk", a_BKT.double(), y) - b_BK.double()
    parts = torch.stack(
        [
            torch.zeros_like(y[:, 0]),
            rows.max(dim=-1).values,
            (y.sum(dim=-1) - 1.0).abs(),
            (-y).max(dim=-1).values,
        ],
        dim=-1,
    )
    return parts.max(dim=-1).values


def projection_distance(s_BT: torch.Tensor, y_BT: torch.Tensor) -> torch.Tensor:
    """‖s - y‖² per sample: the optional regulariser on how far the projection moved s."""
    return (s_BT - y_BT).pow(2).sum(dim=-1)


#: Set to ``0`` to run the α-projection as torch operations on CPU too (read at first use).
KERNEL_ENV_VAR = "TSG_BASELINES_PROJECTION_KERNEL"
#: ``baselines.projection_kernel`` once loaded; False where numba is missing or turned off.
_KERNEL: Any = None
_NO_CATS = np.zeros(0, dtype=np.int64)
_NO_ONEHOT = np.zeros((0, 0))
_NONE_F = np.zeros(0)
_NONE_B = np.zeros(0, dtype=np.bool_)


def _kernel() -> Any:
    """The compiled α-projection module, or None (numba missing, or turned off)."""
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = False
        if os.environ.get(KERNEL_ENV_VAR, "1").strip() != "0":
            try:
                from baselines import projection_kernel
            except ImportError:
                pass
            else:
                _KERNEL = projection_kernel
    return _KERNEL or None


def _project_compiled(
    kernel: Any,
    s_BT: torch.Tensor,
    onehot_BC: np.ndarray,
    cat_B: np.ndarray,
    buffers: tuple[np.ndarray, np.ndarray, np.ndarray],
    scale: float,
    save: bool,
) -> tuple[torch.Tensor, tuple[np.ndarray, ...]]:
    """The α-projection by the compiled forward; with ``save``, what the backward needs."""
    s = s_BT.detach().numpy()
    n, t = s.shape
    y = np.empty((n, t), dtype=s.dtype)
    if save:
        saved: tuple[np.ndarray, ...] = (np.empty((n, t)), np.empty(n), np.empty((n, t)),
                                         np.empty(n), np.empty(n, dtype=np.bool_),
                                         np.empty(n, dtype=np.bool_))
    else:
        saved = (_NO_ONEHOT, _NONE_F, _NO_ONEHOT, _NONE_F, _NONE_B, _NONE_B)
    kernel.alpha_forward(s, onehot_BC, cat_B, *buffers, scale, save, y, *saved)
    return torch.from_numpy(y), saved if save else ()


class _CompiledAlphaFn(torch.autograd.Function):
    """The compiled α-projection with its backward, bit for bit autograd's gradient.

    Backward: ``∂L/∂s = α g + a_k* (-(g·d) c w)`` on the rows where α moves with ``s``,
    ``α g`` on the other rows with a passenger, ``g`` on the rows without one, where ``g·d`` is
    torch's own row sum (the reduction order autograd uses) and the rest one compiled call.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        s_BT: torch.Tensor,
        kernel: Any,
        onehot_BC: np.ndarray,
        cat_B: np.ndarray,
        buffers: tuple[np.ndarray, np.ndarray, np.ndarray],
        scale: float,
    ) -> torch.Tensor:
        y_BT, saved = _project_compiled(kernel, s_BT, onehot_BC, cat_B, buffers, scale, True)
        ctx.kernel, ctx.scale, ctx.saved = kernel, scale, saved
        return y_BT

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g_BT: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        d, alpha, a_k, w, moves, keep = ctx.saved
        g = g_BT.contiguous()
        g_alpha = (g.double() * torch.from_numpy(d)).sum(dim=-1).numpy()
        out = np.empty(d.shape, dtype=g.numpy().dtype)
        ctx.kernel.alpha_backward(g.numpy(), g_alpha, alpha, a_k, w, moves, keep, ctx.scale,
                                  out)
        return torch.from_numpy(out), None, None, None, None, None


def _alpha_project(
    s_BT: torch.Tensor,
    a_ub: torch.Tensor,
    centers: torch.Tensor,
    slack0: torch.Tensor,
    cat_B: torch.Tensor,
    valid_B: torch.Tensor | None,
    shrink: float,
) -> torch.Tensor:
    """The α-projection as torch operations, differentiated by autograd.

    The path on other devices and without numba; the compiled path equals it bit for bit.
    """
    s = s_BT.double()
    # index_select, not advanced indexing: the same copy, several times cheaper
    a_BKT = a_ub.index_select(0, cat_B)
    y0_BT = centers.index_select(0, cat_B)
    d_BT = s - y0_BT
    ad_BK = torch.bmm(a_BKT, d_BT.unsqueeze(-1)).squeeze(-1)  # A d, as einsum("bkt,bt")
    pos = ad_BK > 0
    ratio_BK = torch.where(pos, slack0.index_select(0, cat_B) / torch.where(pos, ad_BK, 1.0),
                           torch.inf)
    alpha_B = ratio_BK.min(dim=-1).values.clamp(max=1.0)
    alpha_B = torch.where(alpha_B < 1.0, (alpha_B * (1.0 - shrink)).clamp(min=0.0), 1.0)
    y_BT = y0_BT + alpha_B[:, None] * d_BT
    if valid_B is not None:
        y_BT = torch.where(valid_B[:, None], y_BT, s)
    return y_BT.to(s_BT.dtype)


class AlphaProjection(nn.Module):
    """Batched α-projection, each sample onto its own category's polytope.

    Args:
        a_ub: (C, K, T) inequality rows of every category (``PolytopeSet.A_ub``).
        b_ub: (C, K) right-hand sides.
        centers: (C, T) strictly interior points y0.
        category: slice of the category one-hot in the observation.
        shrink: relative shrink of α below an exact boundary hit (default 1e-6, as numpy).
    """

    def __init__(
        self,
        a_ub: np.ndarray,
        b_ub: np.ndarray,
        centers: np.ndarray,
        category: slice,
        shrink: float = ALPHA_SHRINK,
    ) -> None:
        super().__init__()
        a = torch.tensor(np.array(a_ub, dtype=np.float64))
        b = torch.tensor(np.array(b_ub, dtype=np.float64))
        y0 = torch.tensor(np.array(centers, dtype=np.float64))
        if a.ndim != 3 or b.shape != a.shape[:2] or y0.shape != (a.shape[0], a.shape[2]):
            raise ValueError(
                f"shapes must be A (C,K,T), b (C,K), centres (C,T); got {tuple(a.shape)}, "
                f"{tuple(b.shape)}, {tuple(y0.shape)}"
            )
        self.register_buffer("a_ub", a, persistent=False)
        self.register_buffer("b_ub", b, persistent=False)
        self.register_buffer("centers", y0, persistent=False)
        # slack of the centre in every row, b - A y0 (> 0 for an interior centre)
        self.register_buffer("slack0", b - torch.einsum("ckt,ct->ck", a, y0), persistent=False)
        self.category = slice(category.start, category.stop)
        self.shrink = float(shrink)

    @classmethod
    def from_env(cls, env: gym.Env) -> AlphaProjection:
        """Build from an env's public ``polytopes`` and ``obs_layout``."""
        u = env.unwrapped
        p = u.polytopes
        return cls(p.A_ub, p.b_ub, p.centers, u.obs_layout["category"])

    @property
    def n_teams(self) -> int:
        """T."""
        return int(self.centers.shape[-1])

    def categories(self, obs_BO: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(cat_B, valid_B)`` from the observations' one-hot (see :func:`categories_from_obs`)."""
        return categories_from_obs(obs_BO, self.category)

    def forward(
        self,
        s_BT: torch.Tensor,
        obs_BO: torch.Tensor | None = None,
        cat_B: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Project ``s`` (points of the simplex) toward each sample's category centre.

        Give either the observations (the category is their one-hot's argmax) or the categories.
        Rows whose observation has no waiting passenger (all-zero one-hot) are returned
        unchanged: there is no constraint to enforce and Tianshou masks their targets anyway.

        Returns:
            (B, T) projected points, in ``s``'s dtype (computed in float64).
        """
        kernel = _kernel() if s_BT.device.type == "cpu" else None
        if kernel is not None:
            if cat_B is None:
                if obs_BO is None:
                    raise ValueError("give obs_BO or cat_B")
                obs = obs_BO.detach().numpy() if isinstance(obs_BO, torch.Tensor) else obs_BO
                onehot, cats = np.asarray(obs)[..., self.category], _NO_CATS
            else:
                onehot = _NO_ONEHOT
                cats = np.ascontiguousarray(torch.as_tensor(cat_B).numpy(), dtype=np.int64)
            args = (kernel, onehot, cats, self._numpy_buffers(), 1.0 - self.shrink)
            if torch.is_grad_enabled() and s_BT.requires_grad:
                return _CompiledAlphaFn.apply(s_BT, *args)
            return _project_compiled(args[0], s_BT, *args[1:], False)[0]
        valid_B = None
        if cat_B is None:
            if obs_BO is None:
                raise ValueError("give obs_BO or cat_B")
            # one max gives both (argmax too would cost a second reduction); the category of
            # a row without a passenger is irrelevant: the row is returned unchanged below
            obs = torch.as_tensor(obs_BO, device=self.centers.device)  # numpy or another device
            top_B, cat_B = obs[..., self.category].max(dim=-1)
            valid_B = top_B > 0.5
        cat_B = torch.as_tensor(cat_B, dtype=torch.long, device=self.centers.device)
        if valid_B is not None and bool(valid_B.all()):
            valid_B = None  # every row has a passenger: skip the final where
        return _alpha_project(s_BT, self.a_ub, self.centers, self.slack0, cat_B, valid_B,
                              self.shrink)

    def _numpy_buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Numpy views of ``a_ub``, ``centers`` and ``slack0`` (remade if a buffer moved)."""
        key = (self.a_ub.data_ptr(), self.centers.data_ptr(), self.slack0.data_ptr())
        cached = self.__dict__.get("_np_buffers")
        if cached is None or cached[0] != key:
            cached = (key, (self.a_ub.numpy(), self.centers.numpy(), self.slack0.numpy()))
            self.__dict__["_np_buffers"] = cached
        return cached[1]

    def violation(self, y_BT: torch.Tensor, cat_B: torch.Tensor) -> torch.Tensor:
        """Per-sample SPEC violation of ``y`` against its category's polytope, in float64."""
        cat_B = torch.as_tensor(cat_B, dtype=torch.long, device=self.centers.device)
        return violation_torch(y_BT, self.a_ub[cat_B], self.b_ub[cat_B])

    def numpy_forward(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """``(s (B, T), obs (B, O)) -> y (B, T)`` float64: :meth:`forward` in numpy (no grad).

        For acting. Where the compiled kernel runs (numba, CPU), it is :meth:`forward`'s own
        arithmetic, bit for bit; else the same formulas in numpy on the same float64 arrays
        (views of the buffers), to float64 rounding. Every output is as feasible as
        :meth:`forward`'s.
        """
        a_ub, centers, slack0 = (t.detach().cpu().numpy() for t in (self.a_ub, self.centers,
                                                                     self.slack0))
        category, shrink = self.category, self.shrink
        kernel = _kernel()
        if kernel is not None:  # the compiled forward: torch's CPU forward bit for bit
            buffers, scale, no = (a_ub, centers, slack0), 1.0 - shrink, _NONE_F

            def project_compiled(s_BT: np.ndarray, obs_BO: np.ndarray) -> np.ndarray:
                s = np.ascontiguousarray(s_BT, dtype=np.float64)
                y = np.empty_like(s)
                kernel.alpha_forward(s, obs_BO[:, category], _NO_CATS, *buffers, scale, False, y,
                                     _NO_ONEHOT, no, _NO_ONEHOT, no, _NONE_B, _NONE_B)
                return y

            return project_compiled

        def project(s_BT: np.ndarray, obs_BO: np.ndarray) -> np.ndarray:
            onehot_BC = obs_BO[:, category]
            cat_B = onehot_BC.argmax(axis=-1)
            y0_BT = centers[cat_B]
            d_BT = s_BT - y0_BT
            ad_BK = np.einsum("bkt,bt->bk", a_ub[cat_B], d_BT)
            pos = ad_BK > 0
            with np.errstate(divide="ignore"):
                ratio_BK = np.where(pos, slack0[cat_B] / np.where(pos, ad_BK, 1.0), np.inf)
            alpha_B = np.minimum(ratio_BK.min(axis=-1), 1.0)
            alpha_B = np.where(alpha_B < 1.0, np.maximum(alpha_B * (1.0 - shrink), 0.0), 1.0)
            y_BT = y0_BT + alpha_B[:, None] * d_BT
            return np.where(onehot_BC.max(axis=-1)[:, None] > 0.5, y_BT, s_BT)

        return project


class RadialSquash(AlphaProjection):
    """Radial squashing into each sample's polytope around its centre (no projection step).

    The rival of the α-projection in Kasaura et al. (RA-L 2023, "radial squashing"): an
    unconstrained vector z ∈ R^T (the actor's scaled logits) is made a direction in the simplex's
    plane, d = z - mean(z), and mapped to

        y = y0 + tanh(‖d‖) · ρ(d̂) · (1 - shrink) · d̂,     d̂ = d / ‖d‖,

    where ρ(d̂) = min over rows with a_i·d̂ > 0 of (b_i - a_i·y0) / (a_i·d̂) is the distance
    from the centre y0 to the polytope's boundary along d̂. Every output is strictly inside the
    polytope (the nonnegativity rows are among the rows, so ρ is finite), every interior point is
    reached, and the map is smooth wherever d ≠ 0. Unlike the α-projection it moves every
    point, feasible or not. Rows with no waiting passenger return y0 of category 0.
    """

    def forward(  # type: ignore[override]
        self,
        z_BT: torch.Tensor,
        obs_BO: torch.Tensor | None = None,
        cat_B: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Squash ``z`` (B, T) into each sample's polytope; float64 inside, ``z``'s dtype out."""
        if cat_B is None:
            if obs_BO is None:
                raise ValueError("give obs_BO or cat_B")
            cat_B, _ = self.categories(torch.as_tensor(obs_BO, device=self.centers.device))
        cat_B = torch.as_tensor(cat_B, dtype=torch.long, device=self.centers.device)
        z = z_BT.double()
        d_BT = z - z.mean(dim=-1, keepdim=True)
        norm_B1 = d_BT.norm(dim=-1, keepdim=True)
        dhat_BT = d_BT / norm_B1.clamp_min(1e-12)
        a_BKT = self.a_ub[cat_B]
        rate_BK = torch.einsum("bkt,bt->bk", a_BKT, dhat_BT)
        pos = rate_BK > 1e-12
        ratio_BK = torch.where(
            pos, self.slack0[cat_B] / torch.where(pos, rate_BK, torch.ones_like(rate_BK)),
            torch.inf,
        )
        rho_B1 = ratio_BK.min(dim=-1, keepdim=True).values
        rho_B1 = torch.where(torch.isfinite(rho_B1), rho_B1, torch.zeros_like(rho_B1))
        y_BT = self.centers[cat_B] + torch.tanh(norm_B1) * rho_B1 * (1.0 - self.shrink) * dhat_BT
        return y_BT.to(z_BT.dtype)

    def numpy_forward(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """``(z (B, T), obs (B, O)) -> y (B, T)`` float64: :meth:`forward` in numpy (no grad).

        The same formulas on the same float64 arrays, to float64 rounding, for acting.
        """
        a_ub, centers, slack0 = (t.detach().cpu().numpy() for t in (self.a_ub, self.centers,
                                                                     self.slack0))
        category, shrink = self.category, self.shrink

        def squash(z_BT: np.ndarray, obs_BO: np.ndarray) -> np.ndarray:
            cat_B = obs_BO[:, category].argmax(axis=-1)
            d_BT = z_BT - z_BT.mean(axis=-1, keepdims=True)
            norm_B1 = np.sqrt((d_BT * d_BT).sum(axis=-1, keepdims=True))
            dhat_BT = d_BT / np.maximum(norm_B1, 1e-12)
            rate_BK = np.einsum("bkt,bt->bk", a_ub[cat_B], dhat_BT)
            pos = rate_BK > 1e-12
            with np.errstate(divide="ignore"):
                ratio_BK = np.where(pos, slack0[cat_B] / np.where(pos, rate_BK, 1.0), np.inf)
            rho_B1 = ratio_BK.min(axis=-1, keepdims=True)
            rho_B1 = np.where(np.isfinite(rho_B1), rho_B1, 0.0)
            return centers[cat_B] + np.tanh(norm_B1) * rho_B1 * (1.0 - shrink) * dhat_BT

        return squash


class L2Projection(nn.Module):
    """Euclidean projection onto each sample's polytope: a differentiable QP (cvxpylayers).

    argmin_x ‖x - s‖² s.t. A_ub x ≤ b_ub, Σx = 1, solved per sample by cvxpylayers (diffcp/SCS),
    gradients by implicit differentiation. The solver is accurate to about 1e-4 only, so the
    solution is cleaned up exactly: clipped at 0, renormalised and α-projected (a move of the
    order of the solver's error that makes it feasible to 1e-6); gradients pass through both.

    Args:
        a_ub: (C, K, T) inequality rows.
        b_ub: (C, K).
        centers: (C, T) interior points (for the clean-up α-projection).
        category: slice of the category one-hot in the observation.
        solver_args: passed to the cvxpylayers call (e.g. ``{"eps": 1e-8}``).

    Raises:
        ImportError: when cvxpylayers is not installed (``pip install 'tsg-envs[l2]'``).
    """

    def __init__(
        self,
        a_ub: np.ndarray,
        b_ub: np.ndarray,
        centers: np.ndarray,
        category: slice,
        solver_args: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        try:
            import cvxpy as cp
            from cvxpylayers.torch import CvxpyLayer
        except ImportError as err:  # pragma: no cover - depends on the extra
            raise ImportError(
                "L2Projection needs cvxpylayers: pip install 'tsg-envs[l2]' "
                "(or pip install cvxpylayers)"
            ) from err
        # cvxpylayers/diffcp against numpy 2: one DeprecationWarning per solve, third-party
        # noise that buries a training's log (the tests' configuration ignores it too)
        warnings.filterwarnings(
            "ignore", message="__array__ implementation doesn't accept a copy keyword",
            category=DeprecationWarning)
        self.alpha = AlphaProjection(a_ub, b_ub, centers, category)
        _, k, t = self.alpha.a_ub.shape
        x = cp.Variable(t)
        a = cp.Parameter((k, t))
        b = cp.Parameter(k)
        s = cp.Parameter(t)
        problem = cp.Problem(cp.Minimize(cp.sum_squares(x - s)), [a @ x <= b, cp.sum(x) == 1])
        # kept out of the module tree: its sparse CSR buffers are constants of the problem's
        # shape, rebuilt on construction, and torch.save cannot serialise them
        object.__setattr__(self, "_layer", CvxpyLayer(problem, parameters=[a, b, s], variables=[x]))
        self.solver_args = dict(solver_args or {})

    def __deepcopy__(self, memo: dict[int, Any]) -> L2Projection:
        # Tianshou deep-copies the actor for its target network: share the (stateless) solver
        # layer, whose sparse tensors cannot be deep-copied, and copy everything else.
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            new.__dict__[key] = value if key == "_layer" else copy.deepcopy(value, memo)
        return new

    @classmethod
    def from_env(cls, env: gym.Env, **kwargs: Any) -> L2Projection:
        """Build from an env's public ``polytopes`` and ``obs_layout``."""
        u = env.unwrapped
        p = u.polytopes
        return cls(p.A_ub, p.b_ub, p.centers, u.obs_layout["category"], **kwargs)

    def forward(
        self,
        s_BT: torch.Tensor,
        obs_BO: torch.Tensor | None = None,
        cat_B: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """L2-project ``s`` (B, T) onto each sample's polytope; returns ``s``'s dtype."""
        valid_B = None
        if cat_B is None:
            if obs_BO is None:
                raise ValueError("give obs_BO or cat_B")
            cat_B, valid_B = self.alpha.categories(
                torch.as_tensor(obs_BO, device=self.alpha.centers.device))
        cat_B = torch.as_tensor(cat_B, dtype=torch.long, device=self.alpha.centers.device)
        s = s_BT.double()
        (x_BT,) = self._layer(
            self.alpha.a_ub[cat_B], self.alpha.b_ub[cat_B], s, solver_args=self.solver_args
        )
        x_BT = x_BT.clamp(min=0.0)
        x_BT = x_BT / x_BT.sum(dim=-1, keepdim=True).clamp(min=1e-12)
        y_BT = self.alpha(x_BT, cat_B=cat_B)
        if valid_B is not None:
            y_BT = torch.where(valid_B[:, None], y_BT, s)
        return y_BT.to(s_BT.dtype)
