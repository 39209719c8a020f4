"""The replay buffer the torch baselines train from, and their return computations in numpy.

:class:`ArrayReplayBuffer` is Tianshou 2.0.1's ``ReplayBuffer`` (its sampling, indexing and
``next``/``prev`` are used unchanged) with two additions: :meth:`~ArrayReplayBuffer.add_rows`
stores N transitions with the bookkeeping of ``ReplayBuffer.add`` but without building a
``Batch`` per transition (and allocates the arrays unwritten), and
:meth:`~ArrayReplayBuffer.to_arrays` / :meth:`~ArrayReplayBuffer.from_arrays` turn it into
plain arrays and back (checkpoints hold it as ``.npz`` plus JSON, never a pickle). Both keep
the buffer's contents and its sampling generator exactly as ``add`` and a pickle would
(tested).

:func:`nstep_return` and :func:`gae` are the n-step return (DDPG, TD3, SAC) and generalised
advantage estimate (PPO) of ``tianshou.algorithm.algorithm_base`` written in numpy with the same
arithmetic (the same values bit for bit, tested against Tianshou's numba kernels). Tianshou
compiles its kernels with numba in every process that builds a policy (about two seconds);
the algorithms here call these instead, and their policies skip that compilation
(:class:`NoNumbaCompile`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tianshou.data import Batch, ReplayBuffer

__all__ = ["ArrayReplayBuffer", "NoNumbaCompile", "nstep_return", "nstep_targets", "gae",
           "episodic_return"]

#: The keys a transition holds in the buffer, in storage order.
KEYS = ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next")


class NoNumbaCompile:
    """Policy mixin: skip Tianshou's numba compilation of GAE and n-step returns.

    ``tianshou.algorithm.algorithm_base.Policy.__init__`` compiles those kernels in every
    process (about 2 s of start-up on a 2-core CPU); the algorithms of this package compute
    both in numpy (:func:`nstep_return`, :func:`gae`) and never call the kernels.
    """

    @staticmethod
    def _compile() -> None:
        """Nothing to compile."""


class ArrayReplayBuffer(ReplayBuffer):
    """Tianshou's ``ReplayBuffer`` with a batched add and a conversion to plain arrays."""

    def add_rows(self, obs: np.ndarray, act: np.ndarray, rew: np.ndarray,
                 terminated: np.ndarray, truncated: np.ndarray, obs_next: np.ndarray) -> None:
        """Store N transitions in order, exactly as N calls of ``add`` would.

        Args:
            obs: (N, O) observations.
            act: (N, A) actions.
            rew: (N,) rewards (stored as float64).
            terminated: (N,) bools.
            truncated: (N,) bools.
            obs_next: (N, O) next observations.
        """
        if not self._meta.get_keys():
            # The first transition allocates the arrays: ``add`` would fill them with zeros of
            # these dtypes (np.full, every page written: a second for the default 200,000
            # rows); np.zeros gives the same arrays, their pages zeroed as they are first used.
            n = self.maxsize
            obs, act, obs_next = np.asarray(obs), np.asarray(act), np.asarray(obs_next)
            self._meta = Batch(
                obs=np.zeros((n, *obs.shape[1:]), dtype=obs.dtype),
                act=np.zeros((n, *act.shape[1:]), dtype=act.dtype),
                rew=np.zeros(n), terminated=np.zeros(n, dtype=bool),
                truncated=np.zeros(n, dtype=bool), done=np.zeros(n, dtype=bool),
                obs_next=np.zeros((n, *obs_next.shape[1:]), dtype=obs_next.dtype), info=Batch())
        meta = self._meta
        for i in range(len(obs)):
            done = bool(terminated[i]) or bool(truncated[i])
            r = float(rew[i])
            # ReplayBuffer._update_state_pre_add, then the row's values
            self.last_index[0] = idx = self._insertion_idx
            self._size = min(self._size + 1, self.maxsize)
            self._insertion_idx = (self._insertion_idx + 1) % self.maxsize
            self._ep_return += r
            self._ep_len += 1
            if done:
                self._ep_return, self._ep_len, self._ep_start_idx = 0.0, 0, self._insertion_idx
            meta.obs[idx] = obs[i]
            meta.act[idx] = act[i]
            meta.rew[idx] = r
            meta.terminated[idx] = terminated[i]
            meta.truncated[idx] = truncated[i]
            meta.done[idx] = done
            meta.obs_next[idx] = obs_next[i]

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """``(arrays, state)``: the stored rows and the JSON-able rest (counters, generator).

        The generator's MT19937 key goes into the arrays (``rng_key``).
        """
        n = len(self)
        arrays = {k: np.asarray(self._meta[k][:n]) for k in KEYS if n}
        name, key, pos, has_gauss, cached = self._random_state.get_state()
        arrays["rng_key"] = np.asarray(key, dtype=np.uint32)
        state = {
            "maxsize": int(self.maxsize),
            "size": int(self._size),
            "insertion_idx": int(self._insertion_idx),
            "last_index": int(self.last_index[0]),
            "ep_return": float(self._ep_return),
            "ep_len": int(self._ep_len),
            "ep_start_idx": int(self._ep_start_idx),
            "rng": {"name": name, "pos": int(pos), "has_gauss": int(has_gauss),
                    "cached_gaussian": float(cached)},
        }
        return arrays, state

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], state: dict[str, Any]
                    ) -> ArrayReplayBuffer:
        """The buffer :meth:`to_arrays` described (same rows, counters and generator)."""
        buf = cls(int(state["maxsize"]))
        buf.restore_arrays(arrays, state)
        return buf

    def restore_arrays(self, arrays: dict[str, np.ndarray], state: dict[str, Any]) -> None:
        """Set this (empty) buffer's rows, counters and generator from :meth:`to_arrays`."""
        n = int(state["size"])
        if n:
            meta = {}
            for k in KEYS:
                stored = np.asarray(arrays[k])
                full = np.zeros((self.maxsize, *stored.shape[1:]), dtype=stored.dtype)
                full[:n] = stored
                meta[k] = full
            self._meta = Batch(**meta, info=Batch())
        self._size = n
        self._insertion_idx = int(state["insertion_idx"])
        self.last_index = np.array([int(state["last_index"])])
        self._ep_return = float(state["ep_return"])
        self._ep_len = int(state["ep_len"])
        self._ep_start_idx = int(state["ep_start_idx"])
        rng = state["rng"]
        self._random_state.set_state((rng["name"], np.asarray(arrays["rng_key"], np.uint32),
                                      rng["pos"], rng["has_gauss"], rng["cached_gaussian"]))


def nstep_return(rew_B: np.ndarray, end_flag_B: np.ndarray, target_q_IA: np.ndarray,
                 stacked_indices_NI: np.ndarray, gamma: float, n_step: int) -> np.ndarray:
    """Tianshou's ``_nstep_return`` in numpy: n-step rewards plus γ^n Q after n steps.

    Args:
        rew_B: Rewards, indexed by buffer index (a whole buffer's, or any array the indices
            address).
        end_flag_B: Episode-end flags, indexed the same way.
        target_q_IA: (I, A) target Q-values after n steps (already masked where terminal).
        stacked_indices_NI: (N, I) buffer indices, row n the n-th successor of row 0.
        gamma: Discount.
        n_step: N.

    Returns:
        (I, A) float64 returns.
    """
    n = int(n_step)
    i_count, a_count = target_q_IA.shape
    gamma_buffer = np.ones(n + 1)
    for i in range(1, n + 1):
        gamma_buffer[i] = gamma_buffer[i - 1] * gamma
    target_q = target_q_IA.reshape(i_count, -1)
    mc = np.zeros(target_q.shape)
    gammas = np.full(i_count, n)
    for k in range(n - 1, -1, -1):
        now = stacked_indices_NI[k]
        ended = end_flag_B[now] > 0
        gammas[ended] = k + 1
        mc[ended] = 0.0
        mc = rew_B[now].reshape(i_count, 1) + gamma * mc
    return (target_q * gamma_buffer[gammas].reshape(i_count, 1) + mc).reshape(
        (i_count, a_count))


def nstep_targets(buffer: ReplayBuffer, indices: np.ndarray,
                  target_q_fn: Callable[[ReplayBuffer, np.ndarray], torch.Tensor],
                  gamma: float, n_step: int) -> torch.Tensor:
    """``Algorithm.compute_nstep_return``'s ``batch.returns``, from :func:`nstep_return`.

    The same values as Tianshou's (its end flags are read at the visited indices only, not
    copied for the whole buffer).
    """
    stacked = [indices]
    for _ in range(n_step - 1):
        stacked.append(buffer.next(stacked[-1]))
    stacked_NI = np.stack(stacked)
    after_n = stacked_NI[-1]
    with torch.no_grad():
        target_q_torch = target_q_fn(buffer, after_n)
    target_q = target_q_torch.reshape(len(indices), -1).cpu().numpy()
    target_q = target_q * (~buffer.terminated[after_n]).reshape(-1, 1)
    # the buffer's rewards and end flags at the visited indices only (Tianshou copies the
    # whole buffer's end flags per update); the unfinished episode's last index counts as an end
    visited, where = np.unique(stacked_NI, return_inverse=True)
    end_flag = buffer.done[visited] | np.isin(visited, buffer.unfinished_index())
    returns = nstep_return(buffer.rew[visited], end_flag, target_q,
                           where.reshape(stacked_NI.shape), gamma, n_step)
    return torch.as_tensor(returns, dtype=target_q_torch.dtype, device=target_q_torch.device)


def gae(v_s: np.ndarray, v_s_: np.ndarray, rew: np.ndarray, end_flag: np.ndarray,
        gamma: float, gae_lambda: float) -> np.ndarray:
    """Tianshou's ``_gae`` in numpy: the advantages (returns are these plus ``v_s``).

    numba computes the float32 inputs in float64 (it promotes array and scalar alike); so does
    this.
    """
    v_s = np.asarray(v_s, dtype=np.float64)
    v_s_ = np.asarray(v_s_, dtype=np.float64)
    returns = np.zeros(rew.shape)
    delta = rew + v_s_ * gamma - v_s
    discount = (1.0 - end_flag) * (gamma * gae_lambda)
    acc = 0.0
    delta_l, discount_l = delta.tolist(), discount.tolist()
    for i in range(len(rew) - 1, -1, -1):
        acc = delta_l[i] + discount_l[i] * acc
        returns[i] = acc
    return returns


def episodic_return(batch: Any, buffer: ReplayBuffer, indices: np.ndarray,
                    v_s_: np.ndarray | torch.Tensor | None = None,
                    v_s: np.ndarray | torch.Tensor | None = None, gamma: float = 0.99,
                    gae_lambda: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """``Algorithm.compute_episodic_return`` with :func:`gae`: ``(returns, advantages)``.

    The same values as Tianshou's (a drop-in ``compute_episodic_return`` for PPO).
    """
    rew = batch.rew
    if v_s_ is None:
        if not np.isclose(gae_lambda, 1.0):
            raise ValueError("without next values, gae_lambda must be 1")
        v_s_ = np.zeros_like(rew)
    else:
        v_s_ = _numpy(v_s_).flatten() * (~buffer.terminated[indices])
    v_s = np.roll(v_s_, 1) if v_s is None else _numpy(v_s).flatten()
    end_flag = np.logical_or(batch.terminated, batch.truncated)
    end_flag[np.isin(indices, buffer.unfinished_index())] = True
    advantage = gae(v_s, v_s_, rew, end_flag, gamma, gae_lambda)
    return advantage + v_s, advantage


def _numpy(x: np.ndarray | torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
