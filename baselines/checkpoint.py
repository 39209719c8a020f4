"""Checkpoints without pickle: networks as safetensors, everything else as npz and JSON.

A training checkpoint is a folder ``ckpt_{step:08d}/`` in the run's output folder, written at a
day boundary (so that resuming from it is bit-exact):

=====================  ====================================================================
``model.safetensors``  every tensor of the Tianshou algorithm's state: networks, target
                       networks (SAC's log α too); metadata: format, method, config (JSON)
``state.json``         method, run identity, config, counters (steps, days, gradient steps,
                       update credit, ...), the optimisers' hyper-parameters, the numpy
                       generators' states, the replay buffer's counters
``arrays.npz``         the optimisers' moments, the torch generator's state, the replay
                       buffer's rows and generator key (``save_buffer``)
=====================  ====================================================================

The weights a run returns (``keep_best``: the best learning-curve evaluation, else the last)
are one file, ``best.safetensors`` (the algorithm's tensors and the same metadata), which is
all ``load`` needs; a committed checkpoint (the attacker panel's) is such a file. Nothing is
ever unpickled: safetensors and ``numpy.load(allow_pickle=False)`` read plain arrays.

Checkpoints written before this format (``*.pt``, pickled) are converted once with
``python -m baselines.checkpoint convert PATH ...`` (it reads them with
``torch.load(weights_only=True)``, which refuses anything but tensors and plain containers).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from baselines.replay import ArrayReplayBuffer

__all__ = [
    "FORMAT", "BEST_NAME", "Checkpoint", "save_checkpoint", "read_checkpoint",
    "latest_checkpoint", "save_weights", "read_weights", "find_weights", "module_tensors",
    "load_module_tensors", "generator_state", "set_generator_state", "random_state",
    "set_random_state", "convert", "main",
]

#: Format tag written into every checkpoint's metadata.
FORMAT = "tsg-envs-checkpoint/1"
#: File name of the weights a run returns, inside its output folder.
BEST_NAME = "best.safetensors"
_OPTIMIZERS = "_optimizers"  # Tianshou's key for the optimisers in Algorithm.state_dict()


# Tensors ----------------------------------------------------------------------------------------
def module_tensors(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A module's state dict without Tianshou's optimiser entry, as contiguous CPU tensors."""
    state = torch.nn.Module.state_dict(module)
    return {k: v.detach().cpu().contiguous().clone() for k, v in state.items()
            if isinstance(v, torch.Tensor)}


def load_module_tensors(module: torch.nn.Module, tensors: Mapping[str, torch.Tensor]) -> None:
    """Load tensors into a module's parameters and buffers (strict: every key must match)."""
    torch.nn.Module.load_state_dict(module, dict(tensors), strict=True)


#: The one metadata key of a safetensors file written here (one key: safetensors stores its
#: metadata as a hash map, whose order, and so the file's bytes, would vary with several).
_META_KEY = "tsg_envs"


def save_weights(path: Path, tensors: Mapping[str, torch.Tensor], *, method: str,
                 config: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> Path:
    """Write ``tensors`` and their metadata to a safetensors file, atomically.

    The same tensors and metadata give the same bytes (committed files keep their hashes).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"format": FORMAT, "method": method, "config": dict(config), **dict(extra or {})}
    tmp = path.with_name(path.name + ".tmp")
    save_file(dict(tensors), str(tmp), metadata={_META_KEY: json.dumps(meta, sort_keys=True)})
    os.chmod(tmp, 0o644)  # safetensors writes 0600; a checkpoint is meant to be shared
    os.replace(tmp, path)
    return path


def read_weights(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """``(tensors, metadata)`` of a safetensors file written by :func:`save_weights`.

    Raises:
        ValueError: when the file is not one of this format.
    """
    tensors: dict[str, torch.Tensor] = {}
    with safe_open(str(path), framework="pt", device="cpu") as f:
        raw = f.metadata() or {}
        for key in f.keys():  # noqa: SIM118 - safe_open is not a mapping
            tensors[key] = f.get_tensor(key)
    try:
        meta = json.loads(raw[_META_KEY])
    except (KeyError, json.JSONDecodeError):
        meta = {}
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a tsg-envs checkpoint (no {FORMAT} metadata)")
    return tensors, meta


# Generators ------------------------------------------------------------------------------------
def generator_state(rng: np.random.Generator) -> dict[str, Any]:
    """A numpy ``Generator``'s state (JSON-able: PCG64's state is two integers)."""
    return rng.bit_generator.state


def set_generator_state(rng: np.random.Generator, state: Mapping[str, Any]) -> None:
    """Restore :func:`generator_state`."""
    rng.bit_generator.state = dict(state)


def random_state(rs: np.random.RandomState | None = None
                 ) -> tuple[dict[str, Any], np.ndarray]:
    """A legacy ``RandomState``'s (or numpy's global one's) state: (JSON part, MT19937 key)."""
    name, key, pos, has_gauss, cached = (rs.get_state() if rs is not None
                                         else np.random.get_state())
    return ({"name": name, "pos": int(pos), "has_gauss": int(has_gauss),
             "cached_gaussian": float(cached)}, np.asarray(key, dtype=np.uint32))


def set_random_state(state: Mapping[str, Any], key: np.ndarray) -> tuple[Any, ...]:
    """The ``get_state()`` tuple of :func:`random_state`'s output (for ``set_state``)."""
    return (state["name"], np.asarray(key, dtype=np.uint32), int(state["pos"]),
            int(state["has_gauss"]), float(state["cached_gaussian"]))


# Optimisers -------------------------------------------------------------------------------------
def _extra_optimizers(algorithm: torch.nn.Module) -> list[torch.optim.Optimizer]:
    extra = getattr(algorithm, "extra_optimizers", None)
    return list(extra()) if extra is not None else []


def _optimizers_to_plain(states: Sequence[dict[str, Any]], prefix: str = "optim"
                         ) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    groups, arrays = [], {}
    for i, st in enumerate(states):
        entry: dict[str, Any] = {"param_groups": [], "state": {}}
        for group in st["param_groups"]:
            entry["param_groups"].append({k: list(v) if isinstance(v, tuple) else v
                                          for k, v in group.items()})
        for pid, slots in st["state"].items():
            entry["state"][str(pid)] = {}
            for name, value in slots.items():
                if isinstance(value, torch.Tensor):
                    key = f"{prefix}/{i}/{pid}/{name}"
                    arrays[key] = value.detach().cpu().numpy()
                    entry["state"][str(pid)][name] = {"array": key, "dtype": str(value.dtype)}
                else:
                    entry["state"][str(pid)][name] = {"value": value}
        groups.append(entry)
    return groups, arrays


def _optimizers_from_plain(plain: Sequence[dict[str, Any]], arrays: Mapping[str, np.ndarray]
                           ) -> list[dict[str, Any]]:
    out = []
    for entry in plain:
        state: dict[int, dict[str, Any]] = {}
        for pid, slots in entry["state"].items():
            state[int(pid)] = {}
            for name, spec in slots.items():
                if "array" in spec:
                    dtype = getattr(torch, spec["dtype"].removeprefix("torch."))
                    state[int(pid)][name] = torch.from_numpy(np.array(arrays[spec["array"]])
                                                             ).to(dtype)
                else:
                    state[int(pid)][name] = spec["value"]
        groups = [{k: tuple(v) if k == "betas" else v for k, v in g.items()}
                  for g in entry["param_groups"]]
        out.append({"state": state, "param_groups": groups})
    return out


# Training checkpoints ---------------------------------------------------------------------------
@dataclass
class Checkpoint:
    """A training checkpoint read back (see the module's table).

    Attributes:
        path: Its folder.
        state: ``state.json``.
        tensors: ``model.safetensors``'s tensors.
        arrays: ``arrays.npz``'s arrays.
    """

    path: Path
    state: dict[str, Any]
    tensors: dict[str, torch.Tensor]
    arrays: dict[str, np.ndarray]

    def restore(self, algorithm: torch.nn.Module) -> None:
        """Load the networks and the optimisers' states into ``algorithm``.

        Optimisers Tianshou's ``state_dict`` leaves out (SAC's entropy coefficient's) come back
        through the algorithm's ``extra_optimizers()``, where it has one.
        """
        optims = _optimizers_from_plain(self.state["optimizers"], self.arrays)
        algorithm.load_state_dict({**self.tensors, _OPTIMIZERS: optims})
        extra = _optimizers_from_plain(self.state.get("extra_optimizers", []), self.arrays)
        for optim, state in zip(_extra_optimizers(algorithm), extra, strict=True):
            optim.load_state_dict(state)

    def torch_rng(self) -> torch.Tensor:
        """The torch generator's state at the checkpoint."""
        return torch.from_numpy(np.array(self.arrays["rng/torch"]))

    def buffer(self) -> ArrayReplayBuffer | None:
        """The replay buffer, if the checkpoint holds one."""
        spec = self.state.get("buffer")
        if spec is None:
            return None
        arrays = {k.removeprefix("buffer/"): v for k, v in self.arrays.items()
                  if k.startswith("buffer/")}
        return ArrayReplayBuffer.from_arrays(arrays, spec)

    def random_state(self, name: str) -> tuple[Any, ...]:
        """A saved legacy ``RandomState``'s ``get_state()`` tuple (see ``save_checkpoint``)."""
        return set_random_state(self.state["random_states"][name],
                                self.arrays[f"random_state/{name}"])


def save_checkpoint(out: Path, step: int, *, method: str, run: Mapping[str, Any],
                    config: Mapping[str, Any], algorithm: torch.nn.Module,
                    counters: Mapping[str, Any], rng: np.random.Generator | None,
                    buffer: ArrayReplayBuffer | None = None,
                    random_states: Mapping[str, np.random.RandomState | None] | None = None
                    ) -> Path:
    """Write ``out/ckpt_{step:08d}/`` (atomically: a temporary folder renamed).

    Args:
        out: The run's output folder.
        step: Environment steps so far (the folder's name).
        method: Method name.
        run: The run's identity (environment, instance, env kwargs, seed).
        config: The method's config, JSON-ready.
        algorithm: The Tianshou algorithm (networks and optimisers).
        counters: JSON-able loop counters.
        rng: The run's numpy generator (or None).
        buffer: The replay buffer to save (or None).
        random_states: Legacy ``RandomState`` generators to save by name (None: numpy's
            global one).

    Returns:
        The folder.
    """
    out = Path(out)
    final = out / f"ckpt_{step:08d}"
    tmp = out / f".ckpt_{step:08d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    full = algorithm.state_dict()
    optims, arrays = _optimizers_to_plain(full.get(_OPTIMIZERS, []))
    extra, extra_arrays = _optimizers_to_plain(
        [o.state_dict() for o in _extra_optimizers(algorithm)], prefix="extra_optim")
    arrays.update(extra_arrays)
    save_weights(tmp / "model.safetensors", module_tensors(algorithm), method=method,
                 config=config)
    arrays["rng/torch"] = torch.get_rng_state().numpy()
    state: dict[str, Any] = {
        "format": FORMAT, "method": method, "run": dict(run), "config": dict(config),
        **dict(counters), "optimizers": optims, "extra_optimizers": extra,
        "rng": generator_state(rng) if rng is not None else None,
        "buffer": None, "random_states": {},
    }
    if buffer is not None:
        buf_arrays, state["buffer"] = buffer.to_arrays()
        arrays.update({f"buffer/{k}": v for k, v in buf_arrays.items()})
    for name, rs in (random_states or {}).items():
        state["random_states"][name], arrays[f"random_state/{name}"] = random_state(rs)
    np.savez(tmp / "arrays.npz", **arrays)
    (tmp / "state.json").write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return final


def latest_checkpoint(out: Path) -> Path | None:
    """The newest complete ``ckpt_*`` folder under ``out`` (by step), or None."""
    out = Path(out)
    if not out.is_dir():
        return None
    found = [p for p in out.glob("ckpt_*") if p.is_dir() and (p / "state.json").is_file()]
    found.sort(key=lambda p: int(p.name.split("_")[1]))
    return found[-1] if found else None


def read_checkpoint(path: Path) -> Checkpoint:
    """Read a checkpoint folder written by :func:`save_checkpoint`."""
    path = Path(path)
    state = json.loads((path / "state.json").read_text(encoding="utf-8"))
    if state.get("format") != FORMAT:
        raise ValueError(f"{path}: not a tsg-envs checkpoint (format {state.get('format')!r})")
    tensors, _ = read_weights(path / "model.safetensors")
    with np.load(path / "arrays.npz", allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return Checkpoint(path=path, state=state, tensors=tensors, arrays=arrays)


def find_weights(path: Path) -> Path:
    """The weights file ``path`` names.

    ``path`` is a ``.safetensors`` file, a checkpoint folder (its model) or a run folder (its
    ``best.safetensors``, else its latest checkpoint's model).

    Raises:
        FileNotFoundError: when there is none; a folder of legacy ``.pt`` files is named, with
            the command that converts them.
    """
    path = Path(path)
    if path.is_file() and path.suffix == ".safetensors":
        return path
    if path.suffix == ".pt" or (path.is_dir() and not (path / BEST_NAME).exists()
                                and latest_checkpoint(path) is None
                                and any(path.glob("*.pt"))):
        raise FileNotFoundError(
            f"{path} holds checkpoints of the old pickled format: convert them once with "
            f"python -m baselines.checkpoint convert {path}")
    if path.is_dir():
        if (path / "model.safetensors").is_file():
            return path / "model.safetensors"
        if (path / BEST_NAME).is_file():
            return path / BEST_NAME
        latest = latest_checkpoint(path)
        if latest is not None:
            return latest / "model.safetensors"
    raise FileNotFoundError(f"no checkpoint at {path}")


# Converting the old pickled format ------------------------------------------------------------
def _legacy_config(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}


def convert(path: Path) -> list[Path]:
    """Convert legacy ``.pt`` checkpoints (a file, or every one under a folder) to this format.

    A run's ``best.pt`` and a committed ``X.pt`` become ``best.safetensors`` / ``X.safetensors``
    (weights and metadata); a training checkpoint ``ckpt_N.pt`` becomes the folder ``ckpt_N``
    (its replay buffer, pickled inside the old file, is not carried over: a resume from it
    continues with an empty buffer); a DQN attacker's file its ``.safetensors``. The old files
    are read with ``torch.load(weights_only=True)`` and left in place.

    Returns:
        The files and folders written.
    """
    path = Path(path)
    files = sorted(path.rglob("*.pt")) if path.is_dir() else [path]
    written = []
    for old in files:
        state = torch.load(old, map_location="cpu", weights_only=True)
        if "state_dict" in state and "meta" in state:  # a DQN attacker
            target = old.with_suffix(".safetensors")
            save_weights(target, {k: v.contiguous() for k, v in state["state_dict"].items()},
                         method="dqn-attacker", config=_legacy_config(state["config"]),
                         extra={"meta": state["meta"]})
            written.append(target)
            continue
        tensors = {k: v.contiguous() for k, v in state["algorithm"].items()
                   if k != _OPTIMIZERS}
        config = _legacy_config(state["config"])
        extra = {k: state[k] for k in ("gradient_steps", "step", "run") if k in state}
        if old.stem.startswith("ckpt_"):
            optims, arrays = _optimizers_to_plain(state["algorithm"][_OPTIMIZERS])
            target = old.with_suffix("")
            target.mkdir(parents=True, exist_ok=True)
            save_weights(target / "model.safetensors", tensors, method=state["method"],
                         config=config)
            arrays["rng/torch"] = state["rng"]["torch"].numpy()
            counters = {k: state[k] for k in ("gradient_steps", "step", "day", "mean_reward",
                                              "update_credit", "wall_s", "best_eval")
                        if k in state}
            out_state = {"format": FORMAT, "method": state["method"], "run": state.get("run"),
                         "config": config, **counters, "optimizers": optims,
                         "rng": state["rng"]["numpy"], "buffer": None, "random_states": {}}
            np.savez(target / "arrays.npz", **arrays)
            (target / "state.json").write_text(json.dumps(out_state, indent=1) + "\n",
                                               encoding="utf-8")
        else:
            target = old.with_suffix(".safetensors")
            save_weights(target, tensors, method=state["method"], config=config, extra=extra)
        written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m baselines.checkpoint convert PATH ...``."""
    p = argparse.ArgumentParser(prog="python -m baselines.checkpoint",
                                description="Convert pickled .pt checkpoints to safetensors.")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="convert .pt files (or every one under a folder)")
    c.add_argument("paths", nargs="+", type=Path)
    args = p.parse_args(argv)
    for path in args.paths:
        for target in convert(path):
            print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
