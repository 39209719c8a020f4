"""``baselines.optim.Adam`` against ``torch.optim.Adam``: bit for bit, state dicts exchangeable."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from baselines.optim import Adam  # noqa: E402


def _train(make_optim, steps: int, weight_decay: float = 0.0, state=None):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    optim = make_optim(net.parameters(), lr=3e-3, betas=(0.8, 0.99), eps=1e-7,
                       weight_decay=weight_decay)
    if state is not None:
        net.load_state_dict(state[0])
        optim.load_state_dict(state[1])
    gen = torch.Generator().manual_seed(1 if state is None else 2)
    for _ in range(steps):
        loss = net(torch.randn(32, 5, generator=gen)).pow(2).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
    return net, optim


@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_parameters_equal_torch_adam_bit_for_bit(weight_decay: float) -> None:
    ours, opt_a = _train(Adam, 200, weight_decay)
    ref, opt_b = _train(torch.optim.Adam, 200, weight_decay)
    for p, q in zip(ours.parameters(), ref.parameters(), strict=True):
        assert torch.equal(p, q)
    a, b = opt_a.state_dict(), opt_b.state_dict()
    assert a["param_groups"] == b["param_groups"]
    assert a["state"].keys() == b["state"].keys()
    for i, slots in b["state"].items():
        assert slots.keys() == a["state"][i].keys()
        for name, value in slots.items():
            assert value.dtype == a["state"][i][name].dtype
            assert torch.equal(value, a["state"][i][name])


def test_state_dicts_move_between_the_two() -> None:
    """Resuming either optimiser from the other's state continues bit for bit."""
    net, opt = _train(torch.optim.Adam, 50)
    state = ({k: v.clone() for k, v in net.state_dict().items()}, opt.state_dict())
    ours, _ = _train(Adam, 30, state=state)
    ref, _ = _train(torch.optim.Adam, 30, state=state)
    for p, q in zip(ours.parameters(), ref.parameters(), strict=True):
        assert torch.equal(p, q)
    net, opt = _train(Adam, 50)
    state = ({k: v.clone() for k, v in net.state_dict().items()}, opt.state_dict())
    ours, _ = _train(Adam, 30, state=state)
    ref, _ = _train(torch.optim.Adam, 30, state=state)
    for p, q in zip(ours.parameters(), ref.parameters(), strict=True):
        assert torch.equal(p, q)


def test_parameters_without_gradient_are_left_alone() -> None:
    a, b = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))
    opt = Adam([a, b], lr=0.1)
    (a * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    opt.step()
    assert torch.equal(b.detach(), torch.ones(2)) and b not in opt.state
    # the first Adam step moves every coordinate by lr (times sign of its gradient), up to eps
    assert torch.allclose(a.detach(), torch.full((3,), 0.9), atol=1e-6)


@pytest.mark.parametrize("kwargs", [{"lr": -1.0}, {"betas": (1.0, 0.9)}, {"eps": -1e-8},
                                    {"weight_decay": -0.1}])
def test_bad_hyper_parameters_raise(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Adam([torch.nn.Parameter(torch.ones(1))], **kwargs)


def test_unsupported_options_and_groups_raise() -> None:
    p = torch.nn.Parameter(torch.ones(1))
    with pytest.raises(ValueError, match="amsgrad"):
        Adam([{"params": [p], "amsgrad": True}])
    with pytest.raises(ValueError, match="one parameter group"):
        Adam([{"params": [p]}, {"params": [torch.nn.Parameter(torch.ones(1))]}])
    with pytest.raises(ValueError, match="empty"):
        Adam([])


def test_training_never_imports_the_compiler(tmp_path) -> None:
    """The point of the class: training α-DDPG, SAC and PPO leaves ``torch._dynamo`` unimported
    (``torch.optim`` imports it on its first step: about a second of every process)."""
    code = (
        "import sys\n"
        "from baselines.api import RunConfig, get_method\n"
        "for algo, hp in [('alpha-ddpg', {'warmup_steps': 64, 'batch_size': 32}),\n"
        "                 ('sac', {'warmup_steps': 64, 'batch_size': 32}),\n"
        "                 ('ppo', {'n_steps': 64, 'batch_size': 32, 'repeat': 1})]:\n"
        "    get_method(algo).train(RunConfig(algo=algo, gradient_steps=4, seed=0,\n"
        f"        out=__import__('pathlib').Path({str(tmp_path)!r}) / algo, progress=False,\n"
        "        hparams={'hidden_sizes': [8, 8], 'eval_every': 0, 'threads': 1, **hp}))\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
