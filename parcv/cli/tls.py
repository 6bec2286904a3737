"""TLS for Dask connections: certificate files to a ``distributed.security.Security``."""

from __future__ import annotations

import os
import ssl
import stat
from pathlib import Path
from typing import Any

__all__ = ["make_security"]

_HINT = "Create a CA and certificates with cluster/tls/make-certs.sh DIR."
# The same files as command-line options and [tls] keys of a spec.
_NAMES = {
    "ca_file": "ca_file (--tls-ca-file)",
    "cert": "cert (--tls-cert)",
    "key": "key (--tls-key)",
}


def _check_file(parameter: str, value: Any, *, private: bool = False) -> str:
    """Return ``value`` as an absolute path to a readable file, or raise."""
    name = _NAMES[parameter]
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path to a PEM file; got {value!r}. {_HINT}")
    path = Path(value).expanduser()
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise FileNotFoundError(f"{name} {what}: {str(path)!r}. {_HINT}")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"{name} {str(path)!r} is not readable by this user.")
    mode = stat.S_IMODE(path.stat().st_mode)
    if private and mode & 0o077:
        raise PermissionError(
            f"{name} {str(path)!r} is a private key readable by other users "
            f"(mode {mode:04o}); restrict it with: chmod 600 {str(path)!r}."
        )
    return str(path.resolve())


def _check_pem(ca_file: str, cert: str, key: str) -> None:
    """Load the files as OpenSSL will, so a bad file fails here with its name."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cafile=ca_file)
    except (ssl.SSLError, ValueError) as err:
        raise ValueError(
            f"{_NAMES['ca_file']} {ca_file!r} holds no PEM CA certificate ({err}). {_HINT}"
        ) from err
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as err:
        raise ValueError(
            f"{_NAMES['cert']} {cert!r} and {_NAMES['key']} {key!r} are not a matching PEM "
            f"certificate and private key ({err}). Pass the key that belongs to the "
            f"certificate. {_HINT}"
        ) from err


def make_security(
    *,
    ca_file: str | os.PathLike[str],
    cert: str | os.PathLike[str],
    key: str | os.PathLike[str],
) -> Any:
    """Build the TLS settings of a Dask client, with encryption required.

    The certificate and key serve parcv's client and, for a cluster parcv
    starts itself (a local or a dask-jobqueue cluster), its scheduler and
    workers too. To reach a scheduler started by someone else, pass a
    certificate signed by the CA that scheduler trusts.

    Parameters
    ----------
    ca_file : str or path
        PEM file of the certificate authority every peer must be signed by.
    cert : str or path
        PEM certificate of this client, signed by ``ca_file``'s CA.
    key : str or path
        PEM private key of ``cert``; readable by its owner only (mode 0600).

    Returns
    -------
    distributed.security.Security
        ``require_encryption=True``; the same files for the client, scheduler
        and worker roles. Pass it as ``DaskBackend(security=...)`` with a
        ``tls://`` address, or to :func:`parcv.engine.backends.jobqueue.make_cluster_backend`.

    Raises
    ------
    TypeError
        A parameter is not a path.
    FileNotFoundError
        A file does not exist.
    PermissionError
        A file is unreadable, or the key is readable by other users.
    ValueError
        A file is not PEM, or the key does not belong to the certificate.

    See Also
    --------
    parcv.DaskBackend : takes ``security=`` with a ``tls://`` address.

    Notes
    -----
    Peers check each other's certificate against the CA (both ways), not the
    host name: Dask clusters are reached by IP address. Keep the CA's own
    private key off the cluster; only ``ca.pem`` is needed there.

    Examples
    --------
    >>> make_security(  # doctest: +ELLIPSIS
    ...     ca_file="missing-ca.pem", cert="client.pem", key="client-key.pem"
    ... )
    Traceback (most recent call last):
    ...
    FileNotFoundError: ca_file (--tls-ca-file) does not exist: 'missing-ca.pem'. Create ...
    """
    paths = {
        "ca_file": _check_file("ca_file", ca_file),
        "cert": _check_file("cert", cert),
        "key": _check_file("key", key, private=True),
    }
    _check_pem(paths["ca_file"], paths["cert"], paths["key"])
    from distributed.security import Security

    roles = {
        f"tls_{role}_{part}": paths[part]
        for role in ("client", "scheduler", "worker")
        for part in ("cert", "key")
    }
    security_class: Any = Security  # untyped upstream
    return security_class(require_encryption=True, tls_ca_file=paths["ca_file"], **roles)
