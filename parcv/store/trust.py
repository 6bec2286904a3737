"""The user's model key, and the tags that say a saved model file is the user's own.

A saved model (``save_models=True``) is a joblib pickle, and unpickling runs code. Its
SHA-256 in the store says only that the file matches the store: anyone who can write
both can replace the two. So each model file is tagged with an HMAC-SHA256 under a key
that lives outside every store, readable by the user only (``$XDG_CONFIG_HOME/parcv/
model-key``, else ``~/.config/parcv/model-key``; made, mode 0600, by the first save).
A model is unpickled only when its tag verifies with that key (:func:`verify_tag`):
one the user's own parcv saved, unchanged since.

Why not a format that does not execute on load: skops' ``skops.io`` loads only the
types a user trusts, but a user's own estimator class is such a type (trusting it runs
its code as a pickle would), it is not a dependency parcv has, and an estimator it does
not support (most of those beyond scikit-learn's) cannot be saved at all. A pickle
authenticated by its writer keeps every estimator and trusts only what the user wrote.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from parcv.errors import ParcvError

__all__ = ["TAG_PREFIX", "key_path", "model_tag", "user_key", "verify_tag"]

#: How the ``models`` table marks a tag (beside an earlier parcv's bare SHA-256).
TAG_PREFIX = "hmac-sha256:"
_CONTEXT = b"parcv saved model v1\0"


def key_path() -> Path:
    """Where the user's model key lives: ``$XDG_CONFIG_HOME/parcv/model-key`` (or ~/.config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "parcv" / "model-key"


def user_key(*, create: bool) -> bytes | None:
    """The user's model key; made now with ``create`` (else None when there is none).

    Raises
    ------
    ParcvError
        The key file can be read or written by others (its tags could be forged), or
        is not a key parcv made.
    """
    path = key_path()
    if not path.exists():
        if not create:
            return None
        _make_key(path)
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO) or not stat.S_ISREG(mode):
        raise ParcvError(
            f"the model key {str(path)!r} is not a file readable by you only (mode "
            f"{stat.filemode(mode)}): anyone who can read it can make a model parcv would "
            f"load. Run `chmod 600 {path}` if only you could ever read it, or remove it (the "
            "next save makes a new one; models saved under the old key then refit)."
        )
    key = path.read_bytes()
    if len(key) != 32:
        raise ParcvError(
            f"the model key {str(path)!r} holds {len(key)} bytes, not the 32 parcv writes. "
            "Remove it: the next save makes a new one (models saved under it then refit)."
        )
    return key


def _make_key(path: Path) -> None:
    """Write a new random key, readable by the user only (never over an existing file)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return  # another process made it first: use theirs
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(32))


def model_tag(key: bytes, file: Path, name: str) -> str:
    """The tag of a model file saved under the entry ``name`` (its content key's file name)."""
    mac = hmac.new(key, _CONTEXT + name.encode() + b"\0", hashlib.sha256)
    with file.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            mac.update(block)
    return TAG_PREFIX + mac.hexdigest()


def verify_tag(key: bytes, file: Path, name: str, tag: str) -> bool:
    """Whether ``tag`` is the tag of ``file`` under ``key`` (compared in constant time)."""
    return hmac.compare_digest(model_tag(key, file, name), tag)
