"""Running a service from the CLI: the flags every service has, and one way to run its event loop.

``add_service_flags`` adds ``--host``, ``--port``, ``--metrics-host``, ``--metrics-port``,
``--reflection/--no-reflection``, ``--log-level`` and ``--grace`` (each also read from
``NINETYNINE_<FLAG>``). Internal services default ``--host`` to loopback, and every service its
metrics: whatever must be reachable from elsewhere is said so explicitly (deploy/ does).
``run_service`` configures logging, runs the service's coroutine on uvloop when it is installed
(the default asyncio loop otherwise) and turns start-up failures into an exit code instead of a
traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ninetynine.common.config import add_env_argument
from ninetynine.common.logging import configure_logging, get_logger

__all__ = ["LOOPBACK", "add_service_flags", "run_loop", "run_service", "tune_gc"]

log = get_logger(__name__)

GC_GEN0_THRESHOLD = 50_000
LOOPBACK = "127.0.0.1"


def add_service_flags(
    parser: argparse.ArgumentParser,
    *,
    port: int,
    metrics_port: int,
    grace: float,
    port_help: str = "gRPC port",
    host: str = LOOPBACK,
) -> None:
    add_env_argument(parser, "--host", default=host, help="address to listen on (0.0.0.0: every interface)")
    add_env_argument(parser, "--port", type=int, default=port, help=f"{port_help} (0 picks a free one)")
    add_env_argument(
        parser, "--metrics-host", default=LOOPBACK, help="address the Prometheus /metrics port listens on"
    )
    add_env_argument(
        parser,
        "--metrics-port",
        type=int,
        default=metrics_port,
        help="Prometheus /metrics port (0 picks a free one)",
    )
    add_env_argument(
        parser,
        "--reflection",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="serve gRPC server reflection (describes every method to any caller; for local tools)",
    )
    add_env_argument(parser, "--log-level", default="info", help="debug, info, warning or error")
    add_env_argument(
        parser, "--grace", type=float, default=grace, help="seconds in-flight calls get on SIGTERM"
    )


def tune_gc() -> None:
    """Long-lived services keep big heaps (room caches, connections) and churn small objects: move
    what start-up built out of the collector's sight and collect the young generation less often,
    so full collections stop pausing the loop for 50-380 ms (measured in the session under load,
    docs/performance.md "Capacity")."""
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 20, 50)


def run_loop(coro: Coroutine[Any, Any, None]) -> None:
    """Run ``coro`` on uvloop when installed, else on the default asyncio loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux/macOS
        asyncio.run(coro)
        return
    uvloop.run(coro)


def run_service(
    name: str,
    main: Callable[[], Awaitable[None]],
    *,
    log_level: str,
    usage_errors: tuple[type[Exception], ...] = (),
) -> int:
    """Run ``main()`` until it returns (after a graceful shutdown). Exit codes: 0 ok, 1 could not
    start (port taken, host unknown), 2 bad configuration (``usage_errors``)."""
    configure_logging(name, level=log_level)

    async def body() -> None:
        tune_gc()
        await main()

    try:
        run_loop(body())
    except usage_errors as exc:
        log.error(f"{name} configuration refused", error=str(exc))
        return 2
    except (RuntimeError, OSError) as exc:  # the port is taken or the host does not exist
        log.error(f"{name} failed to start", error=str(exc))
        return 1
    return 0
