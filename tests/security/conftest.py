"""Real engine, session and gateway (in-process, port 0) for the security tests: the gateway fixtures."""

from tests.gateway.conftest import backend, gateway, make_gateway, ws_client

__all__ = ["backend", "gateway", "make_gateway", "ws_client"]
