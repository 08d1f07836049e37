"""Runs the probe service through ``ninetynine.common.grpcserver.serve`` (for the SIGTERM test).

Prints ``PORT <n>`` on stdout once listening; logs JSON to stderr; exits 0 after a graceful stop.
"""

from __future__ import annotations

import asyncio
import sys

from ninetynine.common.grpcserver import create_server, serve
from ninetynine.common.interceptors import CanonicalLogInterceptor
from ninetynine.common.logging import configure_logging, get_logger
from tests.common import probe


async def main() -> int:
    configure_logging("probe", json_logs=True)
    log = get_logger("serve_probe")
    server, port, health = create_server(
        "127.0.0.1:0", service_names=[probe.SERVICE], interceptors=[CanonicalLogInterceptor("probe")]
    )
    server.add_generic_rpc_handlers([probe.handler()])

    async def on_shutdown() -> None:
        log.info("on_shutdown ran")

    # The port is bound already; clients connect with wait_for_ready until serve() has started.
    print(f"PORT {port}", flush=True)
    await serve(server, health, grace=5.0, service_names=[probe.SERVICE], on_shutdown=on_shutdown)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
