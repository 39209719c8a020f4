"""Hostile: read the evaluator's signing key (to sign forged results with it later).

``__KEY__`` is the key's path on the evaluator's machine (the test puts it where the sandbox's
read-only view of the file system would show it: below the working folder); the default place,
``~/.config/tsg-envs/signing_key``, is tried too. What it read (a length and a digest, never the
bytes) goes into ``DESCRIPTION``.
"""

import hashlib
import os

NAME = "hostile-key-read"


def _try(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(64)
    except OSError as err:
        return f"{path}: {err.strerror}"
    return f"{path}: read {len(data)} bytes sha256 {hashlib.sha256(data).hexdigest()}"


DESCRIPTION = "; ".join([_try("__KEY__"),
                         _try(os.path.expanduser("~root/.config/tsg-envs/signing_key")),
                         _try("/root/.config/tsg-envs/signing_key")])


def make_agent(env):
    centers = env.unwrapped.polytopes.centers

    class Agent:
        def act(self, obs, info):
            return centers[info["category"]]

    return Agent()
