"""12-factor flags: every command-line flag can also come from ``NINETYNINE_<FLAG>``.

Precedence: command line > environment > built-in default. ``--help`` names the variable::

    add_env_argument(parser, "--port", type=int, default=50051, help="gRPC port")
    # --port PORT  gRPC port (env NINETYNINE_PORT; default: 50051)

The environment value is handed to argparse as a string default, so argparse applies ``type``
to it and a bad value fails with the usual "invalid int value" error naming the flag.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, TypeVar

__all__ = ["ENV_PREFIX", "add_env_argument", "env_default", "env_flag", "env_var"]

ENV_PREFIX = "NINETYNINE_"

T = TypeVar("T")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def env_var(flag: str) -> str:
    """The variable for a flag: ``--metrics-port`` or ``metrics_port`` → ``NINETYNINE_METRICS_PORT``."""
    return ENV_PREFIX + flag.lstrip("-").replace("-", "_").upper()


def env_default(name: str, default: T) -> T | str:
    """The flag's default: the environment variable's raw string when set, else ``default``."""
    return os.environ.get(env_var(name), default)


def env_flag(name: str, default: bool = False) -> bool:
    """A boolean from the environment (1/true/yes/on, 0/false/no/off); raises ValueError otherwise."""
    raw = os.environ.get(env_var(name))
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{env_var(name)}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def add_env_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str,
    *,
    default: Any = None,
    help: str = "",
    **kwargs: Any,
) -> argparse.Action:
    """``parser.add_argument(flag, ...)`` with the default read from ``NINETYNINE_<FLAG>``.

    Works for value flags and for ``action="store_true"`` or ``argparse.BooleanOptionalAction``
    (``--x/--no-x``); the variable then takes 1/0, true/false...
    """
    var = env_var(flag)
    if kwargs.get("action") in ("store_true", argparse.BooleanOptionalAction):
        try:
            value: Any = env_flag(flag, bool(default))
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
    else:
        value = env_default(flag, default)
    text = f"{help} (env {var}; default: %(default)s)" if help else f"env {var}; default: %(default)s"
    return parser.add_argument(flag, default=value, help=text, **kwargs)
