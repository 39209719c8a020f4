"""Tests of the torch projections (baselines.projection) against hand values and numpy."""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import baselines.projection as projection_module  # noqa: E402
import tsg_envs  # noqa: E402,F401
from baselines.projection import (  # noqa: E402
    AlphaProjection,
    L2Projection,
    categories_from_obs,
    projection_distance,
    violation_torch,
)
from tsg_envs.polytope import FEASIBILITY_TOL, alpha_project, violation  # noqa: E402

HAS_CVXPYLAYERS = importlib.util.find_spec("cvxpylayers") is not None

# A hand-made 2-team "polytope" (one category): the risk row -π0 ≤ -0.5 (π0 ≥ 0.5), then the
# rows -π_t ≤ 0; centre y0 = (0.75, 0.25). One-hot of the category at obs[0:1].
A_HAND = np.array([[[-1.0, 0.0], [-1.0, 0.0], [0.0, -1.0]]])
B_HAND = np.array([[-0.5, 0.0, 0.0]])
Y0_HAND = np.array([[0.75, 0.25]])
SHRINK = 1 - 1e-6


@pytest.fixture(scope="module")
def env() -> gym.Env:
    return gym.make("tsg/Screening-v1", instance_seed=0)


@pytest.fixture(scope="module")
def proj(env: gym.Env) -> AlphaProjection:
    return AlphaProjection.from_env(env)


HAS_NUMBA = importlib.util.find_spec("numba") is not None


@pytest.fixture(params=["compiled", "torch"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test through the compiled kernel (numba) and through plain torch operations."""
    if request.param == "compiled":
        if not HAS_NUMBA:
            pytest.skip("numba is not installed")
        monkeypatch.setattr(projection_module, "_KERNEL", None)  # load it
        assert projection_module._kernel() is not None
    else:
        monkeypatch.setattr(projection_module, "_KERNEL", False)
    return str(request.param)


def _hand() -> AlphaProjection:
    return AlphaProjection(A_HAND, B_HAND, Y0_HAND, slice(0, 1))


def test_hand_projection_value(path: str) -> None:
    # s = (0, 1): d = s - y0 = (-0.75, 0.75). Row 0: a·d = 0.75 > 0, slack b - a·y0 = -0.5 +
    # 0.75 = 0.25, ratio 1/3; row 1 (-π0 ≤ 0): a·d = 0.75, slack 0.75, ratio 1; row 2: a·d < 0.
    # α = (1/3)(1 - 1e-6); y = y0 + α d = (0.75 - 0.25 (1 - 1e-6), 0.25 + 0.25 (1 - 1e-6)).
    y = _hand()(torch.tensor([[0.0, 1.0]], dtype=torch.float64), cat_B=torch.tensor([0]))
    np.testing.assert_allclose(y.numpy(), [[0.50000025, 0.49999975]], rtol=0, atol=1e-15)
    # a point inside is returned unchanged (α = 1, no shrink)
    y_in = _hand()(torch.tensor([[0.6, 0.4]], dtype=torch.float64), cat_B=torch.tensor([0]))
    np.testing.assert_array_equal(y_in.numpy(), [[0.6, 0.4]])


def test_hand_projection_jacobian(path: str) -> None:
    # With row 0 active, α(s) = c σ / (a·(s - y0)), c = 1 - 1e-6, σ = 0.25, a = (-1, 0), so
    # ∂α/∂s = -c σ a / (a·d)² = (c·0.25/0.5625, 0) = (4c/9, 0) at s = (0, 1), and
    # J = α I + d ∂αᵀ = [[c/3 - 0.75·4c/9, 0], [0.75·4c/9, c/3]] = [[0, 0], [c/3, c/3]].
    s = torch.tensor([[0.0, 1.0]], dtype=torch.float64, requires_grad=True)
    jac = torch.autograd.functional.jacobian(lambda x: _hand()(x, cat_B=torch.tensor([0])), s)[
        0, :, 0, :
    ]
    np.testing.assert_allclose(
        jac.numpy(), [[0.0, 0.0], [SHRINK / 3, SHRINK / 3]], rtol=0, atol=1e-12
    )


def test_gradcheck_on_the_default_polytopes(env: gym.Env, proj: AlphaProjection, path: str
                                             ) -> None:
    polys = env.unwrapped.polytopes
    rng = np.random.default_rng(0)
    n = 400
    cats = rng.integers(0, polys.n_categories, n)
    logits = rng.normal(size=(n, proj.n_teams)) * rng.choice([0.01, 4.0], size=(n, 1))
    s = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    # keep points away from the kinks of α = min(1, min_i ratio_i) (numpy, independently):
    # the smallest ratio not within 1e-3 of 1 and not tied (1e-3) with the second smallest
    d = s - polys.centers[cats]
    ad = np.einsum("nkt,nt->nk", polys.A_ub[cats], d)
    slack = polys.b_ub[cats] - np.einsum("nkt,nt->nk", polys.A_ub[cats], polys.centers[cats])
    ratio = np.sort(np.where(ad > 0, slack / np.where(ad > 0, ad, 1.0), np.inf), axis=-1)
    smooth = (np.abs(ratio[:, 0] - 1) > 1e-3) & (ratio[:, 1] - ratio[:, 0] > 1e-3)
    inside, outside = (
        np.flatnonzero(smooth & (ratio[:, 0] > 1)),
        np.flatnonzero(smooth & (ratio[:, 0] < 1)),
    )
    assert len(inside) >= 4 and len(outside) >= 12
    keep = np.concatenate([inside[:4], outside[:12]])
    x = torch.tensor(s[keep]).requires_grad_(True)
    cat_b = torch.tensor(cats[keep])
    assert torch.autograd.gradcheck(lambda v: proj(v, cat_B=cat_b), (x,), eps=1e-7, atol=1e-5)


def test_agrees_with_numpy(env: gym.Env, proj: AlphaProjection, path: str) -> None:
    polys = env.unwrapped.polytopes
    rng = np.random.default_rng(1)
    n = 20_000
    cats = rng.integers(0, polys.n_categories, n)
    s = rng.dirichlet(np.full(proj.n_teams, 0.3), size=n)
    expected = alpha_project(s, polys.centers[cats], polys.A_ub[cats], polys.b_ub[cats])
    got = proj(torch.tensor(s), cat_B=torch.tensor(cats)).numpy()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_category_from_observation_and_terminal_rows(env: gym.Env, proj: AlphaProjection,
                                                     path: str) -> None:
    layout = env.unwrapped.obs_layout
    obs_dim = env.observation_space.shape[0]
    rng = np.random.default_rng(2)
    cats = np.array([3, 17, 0, 49])
    obs = np.zeros((5, obs_dim), dtype=np.float32)
    obs[np.arange(4), layout["category"].start + cats] = 1.0  # row 4: all-zero one-hot
    cat_B, valid_B = categories_from_obs(torch.tensor(obs), layout["category"])
    assert cat_B[:4].tolist() == [3, 17, 0, 49]
    assert valid_B.tolist() == [True, True, True, True, False]
    s = torch.softmax(torch.tensor(rng.normal(size=(5, proj.n_teams)) * 5), -1)
    by_obs = proj(s, obs_BO=torch.tensor(obs))
    by_cat = proj(s[:4], cat_B=torch.tensor(cats))
    np.testing.assert_array_equal(by_obs[:4].numpy(), by_cat.numpy())
    np.testing.assert_array_equal(by_obs[4].numpy(), s[4].numpy())  # no passenger: unchanged


def test_float32_outputs_are_feasible_in_float64(env: gym.Env, proj: AlphaProjection,
                                                 path: str) -> None:
    polys = env.unwrapped.polytopes
    rng = np.random.default_rng(3)
    n = 100_000
    cats = rng.integers(0, polys.n_categories, n)
    logits = rng.normal(size=(n, proj.n_teams)) * rng.choice([1.0, 10.0, 50.0], size=(n, 1))
    s32 = torch.softmax(torch.tensor(logits, dtype=torch.float32), -1)
    y32 = proj(s32, cat_B=torch.tensor(cats))
    assert y32.dtype == torch.float32
    v = violation(y32.numpy().astype(np.float64), polys.A_ub[cats], polys.b_ub[cats])
    assert v.max() <= FEASIBILITY_TOL
    # and the torch violation measure agrees with numpy's
    vt = proj.violation(y32, torch.tensor(cats)).numpy()
    np.testing.assert_allclose(vt, v, rtol=0, atol=1e-12)


def test_violation_torch_by_hand() -> None:
    # y = (1.2, -0.2): row 0 -1.2 ≤ -0.5 holds (excess -0.7), -π0 row excess -1.2, -π1 row
    # excess 0.2; |Σ - 1| = 0; max(-y) = 0.2 → violation 0.2.
    y = torch.tensor([[1.2, -0.2]], dtype=torch.float64)
    v = violation_torch(y, torch.tensor(A_HAND), torch.tensor(B_HAND))
    np.testing.assert_allclose(v.numpy(), [0.2], atol=1e-15)
    # ‖s - y‖² of (1, 0) vs (0.5, 0.5) is 0.25 + 0.25
    d = projection_distance(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.5, 0.5]]))
    np.testing.assert_allclose(d.numpy(), [0.5])


@pytest.mark.skipif(not HAS_CVXPYLAYERS, reason="needs the l2 extra (cvxpylayers)")
def test_l2_projection_hand_and_feasible(env: gym.Env) -> None:
    # Hand polytope: the L2 projection of s = (0, 1) onto {π0 ≥ 0.5, simplex} is (0.5, 0.5);
    # the clean-up α-step may move it toward y0 by the solver's error only.
    layer = L2Projection(A_HAND, B_HAND, Y0_HAND, slice(0, 1))
    y = layer(torch.tensor([[0.0, 1.0]], dtype=torch.float64), cat_B=torch.tensor([0]))
    np.testing.assert_allclose(y.detach().numpy(), [[0.5, 0.5]], atol=1e-4)
    assert y[0, 0].item() >= 0.5 - FEASIBILITY_TOL
    # default polytopes: feasible to 1e-6, no farther from s than the α-projection, grads exist
    l2 = L2Projection.from_env(env)
    alpha = AlphaProjection.from_env(env)
    polys = env.unwrapped.polytopes
    rng = np.random.default_rng(4)
    cats = rng.integers(0, polys.n_categories, 24)
    s = torch.softmax(torch.tensor(rng.normal(size=(24, 10)) * 4), -1).requires_grad_(True)
    y = l2(s, cat_B=torch.tensor(cats))
    v = violation(y.detach().numpy(), polys.A_ub[cats], polys.b_ub[cats])
    assert v.max() <= FEASIBILITY_TOL
    ya = alpha(s.detach(), cat_B=torch.tensor(cats))
    d_l2 = projection_distance(s.detach(), y.detach())
    d_alpha = projection_distance(s.detach(), ya)
    assert bool((d_l2 <= d_alpha + 1e-4).all())
    y.sum().backward()
    assert s.grad is not None and torch.isfinite(s.grad).all()


def _reference_alpha_projection(p: AlphaProjection, s_BT: torch.Tensor, obs_BO: torch.Tensor
                                ) -> torch.Tensor:
    """The α-projection written plainly (argmax, advanced indexing, einsum, ``where`` always):
    the form the optimised ``forward`` (one max, ``index_select``, ``bmm``) must equal bit for
    bit, values and gradients, so that training runs do not move."""
    onehot = obs_BO[..., p.category]
    valid_B, cat_B = onehot.max(dim=-1).values > 0.5, onehot.argmax(dim=-1)
    s = s_BT.double()
    a_BKT, y0_BT = p.a_ub[cat_B], p.centers[cat_B]
    d_BT = s - y0_BT
    ad_BK = torch.einsum("bkt,bt->bk", a_BKT, d_BT)
    pos = ad_BK > 0
    ratio_BK = torch.where(pos, p.slack0[cat_B] / torch.where(pos, ad_BK, torch.ones_like(ad_BK)),
                           torch.inf)
    alpha_B = ratio_BK.min(dim=-1).values.clamp(max=1.0)
    alpha_B = torch.where(alpha_B < 1.0, (alpha_B * (1.0 - p.shrink)).clamp(min=0.0),
                          torch.ones_like(alpha_B))
    y_BT = torch.where(valid_B[:, None], y0_BT + alpha_B[:, None] * d_BT, s)
    return y_BT.to(s_BT.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_equals_the_plain_form_bit_for_bit(env: gym.Env, proj: AlphaProjection,
                                                   dtype: torch.dtype, path: str) -> None:
    u = env.unwrapped
    n_cat, n_teams = proj.a_ub.shape[0], proj.n_teams
    gen = torch.Generator().manual_seed(7)
    for trial in range(40):
        b = 1 + trial * 7
        obs = torch.rand(b, env.observation_space.shape[0], generator=gen)
        onehot = torch.zeros(b, n_cat)
        onehot[torch.arange(b), torch.randint(0, n_cat, (b,), generator=gen)] = 1.0
        if trial % 3 == 0:  # rows after the day's last passenger: all-zero one-hot
            onehot[torch.rand(b, generator=gen) < 0.3] = 0.0
        obs[:, u.obs_layout["category"]] = onehot
        z = torch.randn(b, n_teams, generator=gen, dtype=dtype) * (0.1 + trial % 4)
        weights = torch.randn(b, n_teams, generator=gen, dtype=dtype)
        results = []
        for fn in (proj, lambda s, o: _reference_alpha_projection(proj, s, o)):
            z_leaf = z.clone().requires_grad_(True)
            y = fn(torch.softmax(z_leaf, dim=-1), obs)
            (y * weights).sum().backward()
            results.append((y.detach(), z_leaf.grad))
        (y_new, g_new), (y_ref, g_ref) = results
        assert torch.equal(y_new, y_ref) and torch.equal(g_new, g_ref), trial


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_alpha_projection_on_cuda_equals_the_cpu_path(dtype) -> None:
    """On a GPU the torch path runs; it gives the CPU path's values and gradients, whether the
    observations come as a CUDA tensor, a CPU tensor or numpy (a CPU mask used to meet CUDA
    tensors there). A random polytope set: 3 risk rows and -π ≤ 0, the uniform centre inside."""
    rng = np.random.default_rng(3)
    c, m, t = 7, 3, 5
    a_risk = rng.uniform(0.0, 1.0, (c, m, t))
    a_ub = np.concatenate([a_risk, -np.broadcast_to(np.eye(t), (c, t, t))], axis=1)
    centres = np.full((c, t), 1.0 / t)
    b_ub = np.concatenate([a_risk @ centres[0] + rng.uniform(0.02, 0.1, (c, m)),
                           np.zeros((c, t))], axis=1)
    cpu = AlphaProjection(a_ub, b_ub, centres, slice(2, 2 + c))
    gpu = AlphaProjection(a_ub, b_ub, centres, slice(2, 2 + c)).to("cuda")
    b = 257
    obs = np.zeros((b, 2 + c + 4), dtype=np.float32)
    cats = rng.integers(0, c, b)
    obs[np.arange(b), 2 + cats] = 1.0
    obs[rng.random(b) < 0.1, 2:2 + c] = 0.0  # rows without a passenger
    s = rng.dirichlet(np.ones(t), b) * 1.5 - 0.1  # many outside their polytope
    w = torch.tensor(rng.normal(size=(b, t)), dtype=dtype)
    s_c = torch.tensor(s, dtype=dtype, requires_grad=True)
    y_c = cpu(s_c, torch.as_tensor(obs))
    (g_c,) = torch.autograd.grad((y_c * w).sum(), s_c)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for o in (torch.as_tensor(obs, device="cuda"), torch.as_tensor(obs), obs):
        s_g = torch.tensor(s, dtype=dtype, device="cuda", requires_grad=True)
        y_g = gpu(s_g, o)
        (g_g,) = torch.autograd.grad((y_g * w.cuda()).sum(), s_g)
        assert y_g.device.type == "cuda"
        torch.testing.assert_close(y_g.cpu(), y_c, rtol=0, atol=tol)
        torch.testing.assert_close(g_g.cpu(), g_c, rtol=0, atol=10 * tol)
