"""Signed results: the evaluator's and ``verify``'s Ed25519 signatures, and the keys trusted.

A result is only as good as the machine that computed it, so every result the evaluator writes
and every verification ``verify`` writes is signed (Ed25519, from the ``cryptography``
package) with the private key of the machine that produced it (SPEC §7):

* **The machine's key** lives outside any results folder, at :func:`key_path`:
  ``$TSG_ENVS_SIGNING_KEY`` if set, else ``$XDG_CONFIG_HOME/tsg-envs/signing_key``, else
  ``~/.config/tsg-envs/signing_key``. It is created on first use (a raw 32-byte Ed25519 seed,
  mode 0600, in a folder of mode 0700) and refused while group or others can read it. A
  submission never reads it: its sealed process sees the evaluator's home as an empty folder
  and the key file itself as an empty file (:mod:`leaderboard.sandbox` masks it wherever it
  is), and as root it runs as a user of its own, to whom a 0600 file of root's is closed. (An
  *unsealed* run, ``--no-isolation`` or no bubblewrap, runs the submission as you: it could
  read the key. Evaluate only your own code that way.)
* **The keys trusted** by the committed board are committed in ``leaderboard/trusted_keys.json``
  (:data:`TRUSTED_KEYS_FILE`), beside the code, never in a results folder: a folder of results
  cannot vouch for itself. On a user's machine its own key is trusted too
  (:func:`trusted_keys` with ``local=True``, what ``render`` does by default), so a newcomer's
  own evaluations rank on their local board; the README's blocks and ``LEADERBOARD.md`` as
  committed (``python -m leaderboard readme``) trust the committed keys only.

What is signed is the result's canonical JSON (sorted keys, no spaces, strict floats) without
its ``signature`` block, after the domain string :data:`RESULT_DOMAIN`; the block records the
key's id (the first 16 hex digits of the sha256 of the raw public key), the public key and the
signature (base64). A verification sidecar (``RESULT.verified``) is signed the same way under
:data:`VERIFICATION_DOMAIN`. Anything edited after signing, hand-written, or signed by a key the
board does not trust shows as unverified and never ranks on the hard track.

Maintainers: ``python -m leaderboard key`` prints this machine's key id and the line to add to
``trusted_keys.json``; ``python -m leaderboard sign RESULT...`` re-signs results (after checking
their schema, digest and that their stored summary is what their episodes give). CONTRIBUTING.md
says how to add and rotate keys.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "KEY_ENV",
    "RESULT_DOMAIN",
    "TRUSTED_KEYS_FILE",
    "VERIFICATION_DOMAIN",
    "SignatureCheck",
    "canonical",
    "public_bytes",
    "check_signature",
    "committed_keys",
    "key_id",
    "key_path",
    "load_key",
    "own_public_key",
    "sign",
    "sign_result",
    "trusted_keys",
]

#: The environment variable naming the private key's file (CI, tests, a maintainer's project key).
KEY_ENV = "TSG_ENVS_SIGNING_KEY"
#: Prefix of every signed result's bytes (a signature never passes for another kind of record).
RESULT_DOMAIN = b"tsg-envs leaderboard result v1\n"
#: Prefix of every signed verification sidecar's bytes.
VERIFICATION_DOMAIN = b"tsg-envs leaderboard verification v1\n"
#: The public keys the committed board trusts: ``{"keys": {KEY_ID: {"public_key", "owner",
#: "added"}}}``.
TRUSTED_KEYS_FILE: Path = Path(__file__).resolve().parent / "trusted_keys.json"
#: Keys whose result fields are not signed: the signature itself and render's bookkeeping.
UNSIGNED_KEYS = ("signature", "_path")


def key_path() -> Path:
    """Where this machine's private signing key is (the module doc); it may not exist yet."""
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tsg-envs" / "signing_key"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def key_id(public_key: bytes) -> str:
    """A key's id: the first 16 hex digits of the sha256 of its raw 32-byte public key."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def load_key(create: bool = True) -> Any:
    """This machine's Ed25519 private key (created on first use when ``create``).

    Raises:
        FileNotFoundError: no key and ``create`` is false.
        PermissionError: the key file is readable by group or others (``chmod 600`` it).
        ValueError: the file does not hold a key.
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = key_path()
    if create and not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        key = Ed25519PrivateKey.generate()
        from cryptography.hazmat.primitives import serialization

        raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                serialization.NoEncryption())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:  # another process made it first: use that one
            return load_key(create=False)
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        return key
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if st.st_mode & 0o077:
            raise PermissionError(f"{path} is readable by others (mode {st.st_mode & 0o777:o}): "
                                  f"chmod 600 it")
        raw = fh.read(33)
    if len(raw) != 32:
        raise ValueError(f"{path} does not hold a raw 32-byte Ed25519 key")
    return Ed25519PrivateKey.from_private_bytes(raw)


def public_bytes(key: Any) -> bytes:
    """The raw 32 bytes of the public half of the Ed25519 private key ``key``."""
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(serialization.Encoding.Raw,
                                         serialization.PublicFormat.Raw)


def own_public_key() -> bytes | None:
    """This machine's public key, or None when it has no (usable) key yet; never creates one."""
    try:
        return public_bytes(load_key(create=False))
    except (OSError, ValueError):
        return None


def committed_keys(path: Path | None = None) -> dict[str, bytes]:
    """The public keys the committed board trusts, by id (:data:`TRUSTED_KEYS_FILE`)."""
    path = TRUSTED_KEYS_FILE if path is None else path
    data = json.loads(path.read_text(encoding="utf-8"))
    keys = {}
    for kid, entry in data.get("keys", {}).items():
        raw = base64.b64decode(entry["public_key"], validate=True)
        if len(raw) != 32 or key_id(raw) != kid:
            raise ValueError(f"{path}: key {kid!r} does not match its public key")
        keys[kid] = raw
    return keys


def trusted_keys(local: bool = True) -> dict[str, bytes]:
    """The committed keys, and (``local``) this machine's own key when it has one."""
    keys = committed_keys()
    own = own_public_key() if local else None
    if own is not None:
        keys[key_id(own)] = own
    return keys


def canonical(doc: dict[str, Any]) -> bytes:
    """The bytes a result's signature covers: its canonical JSON without the unsigned keys."""
    core = {k: v for k, v in doc.items() if k not in UNSIGNED_KEYS}
    return json.dumps(core, sort_keys=True, separators=(",", ":"), allow_nan=False,
                      ensure_ascii=True).encode("ascii")


def sign(doc: dict[str, Any], domain: bytes) -> dict[str, str]:
    """The signature block of ``doc`` (its :func:`canonical` bytes after ``domain``)."""
    key = load_key(create=True)
    public = public_bytes(key)
    return {"algorithm": "ed25519", "key_id": key_id(public), "public_key": _b64(public),
            "value": _b64(key.sign(domain + canonical(doc)))}


def sign_result(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its ``signature`` block set (replaced) by this machine's key."""
    doc = {k: v for k, v in doc.items() if k != "signature"}
    doc["signature"] = sign(doc, RESULT_DOMAIN)
    return doc


@dataclass(frozen=True)
class SignatureCheck:
    """Whether a record's signature is valid and from a trusted key.

    Attributes:
        ok: Valid, and by a key of the trusted set.
        key_id: The signing key's id (None when unsigned or malformed).
        why: One line: who signed it, or what is wrong.
    """

    ok: bool
    key_id: str | None
    why: str

    def __bool__(self) -> bool:
        return self.ok


def check_signature(doc: dict[str, Any], trusted: dict[str, bytes],
                    domain: bytes = RESULT_DOMAIN) -> SignatureCheck:
    """Check ``doc["signature"]`` against ``doc``'s canonical bytes and the ``trusted`` keys."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    block = doc.get("signature")
    if block is None:
        return SignatureCheck(False, None, "unsigned")
    try:
        kid = str(block["key_id"])
        public = base64.b64decode(block["public_key"], validate=True)
        value = base64.b64decode(block["value"], validate=True)
        if block.get("algorithm") != "ed25519" or len(public) != 32 or key_id(public) != kid:
            raise ValueError("malformed")
    except (KeyError, TypeError, ValueError):
        return SignatureCheck(False, None, "malformed signature")
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(value, domain + canonical(doc))
    except (InvalidSignature, ValueError):
        return SignatureCheck(False, kid, f"signature by key {kid} does not match the content "
                              "(edited after signing)")
    if trusted.get(kid) != public:
        return SignatureCheck(False, kid, f"signed by key {kid}, which this board does not trust")
    return SignatureCheck(True, kid, f"signed by trusted key {kid}")
