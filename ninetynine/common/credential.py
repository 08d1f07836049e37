"""The service credential: a shared secret the gateway presents to the session on every call.

The secret travels as ``authorization: Bearer <secret>`` call metadata (see
:class:`ninetynine.common.interceptors.ServiceCredentialInterceptor` for the check). Both sides read
it the same way, never from the command line (``ps`` shows command lines to every user):

* ``--service-token-file`` (env ``NINETYNINE_SERVICE_TOKEN_FILE``): a file holding the secret,
  e.g. a mounted Kubernetes Secret; surrounding whitespace is ignored;
* else the environment variable ``NINETYNINE_SERVICE_TOKEN`` itself (``ninety-nine serve`` hands
  its per-run secret to its children this way). There is deliberately no ``--service-token`` flag.

A secret is 16 to 256 printable ASCII characters without spaces (it must fit in an HTTP/2 header).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
from pathlib import Path

from ninetynine.common.config import add_env_argument, env_var

__all__ = [
    "AUTHORIZATION_HEADER",
    "BEARER_PREFIX",
    "TOKEN_ENV",
    "CredentialError",
    "add_credential_flag",
    "bearer_metadata",
    "generate_token",
    "is_loopback",
    "load_service_token",
]

AUTHORIZATION_HEADER = "authorization"
BEARER_PREFIX = "Bearer "
TOKEN_ENV = env_var("--service-token")
MIN_TOKEN_CHARS = 16
MAX_TOKEN_CHARS = 256


class CredentialError(ValueError):
    """The service credential is configured wrongly (unreadable file, too short, not ASCII...)."""


def add_credential_flag(parser: argparse.ArgumentParser, *, who: str) -> None:
    add_env_argument(
        parser,
        "--service-token-file",
        default=None,
        help=f"file holding the service credential {who}; without it the credential comes from "
        f"{TOKEN_ENV}, never from the command line (docs/operations.md#service-credential)",
    )


def _check(token: str, source: str) -> str:
    if not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS:
        raise CredentialError(
            f"the service credential from {source} must be {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} "
            f"characters, got {len(token)}"
        )
    if not all("!" <= char <= "~" for char in token):
        raise CredentialError(f"the service credential from {source} must be printable ASCII without spaces")
    return token


def load_service_token(token_file: str | None) -> str | None:
    """The configured secret: from ``token_file`` when given, else ``NINETYNINE_SERVICE_TOKEN``;
    None when neither is set. Raises :class:`CredentialError` for a bad or unreadable secret."""
    if token_file:
        try:
            text = Path(token_file).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise CredentialError(f"cannot read --service-token-file {token_file}: {exc}") from None
        return _check(text.strip(), f"--service-token-file {token_file}")
    raw = os.environ.get(TOKEN_ENV)
    if raw is None or not raw.strip():
        return None
    return _check(raw.strip(), TOKEN_ENV)


def generate_token() -> str:
    """A fresh random secret (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata that presents ``token``."""
    return ((AUTHORIZATION_HEADER, BEARER_PREFIX + token),)


def is_loopback(host: str) -> bool:
    """True when a listener on ``host`` is reachable from this machine only.

    ``localhost`` and loopback IP literals are; the wildcard (``""``, ``0.0.0.0``, ``::``) and
    other names are not (a name may resolve to anything).
    """
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
