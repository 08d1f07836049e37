"""The session's calls to the engine: timed per method, and an engine outage refused as ENGINE_UNAVAILABLE.

Rule refusals (``OVER_99``, ``STALE_STATE``...) pass through as the engine raised them; only the
lack of an engine (UNAVAILABLE, DEADLINE_EXCEEDED) becomes the session's own refusal.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TypeVar

import grpc

from ninetynine.common.errors import ServiceError
from ninetynine.engine.client import EngineClient
from ninetynine.session.errors import session_error
from ninetynine.session.metrics import SessionMetrics

ENGINE_DOWN = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

T = TypeVar("T")


class EngineCalls:
    """:class:`EngineClient` as the session uses it: every call observed in ``engine_calls``."""

    def __init__(self, client: EngineClient, metrics: SessionMetrics) -> None:
        self.client = client
        self.metrics = metrics

    async def call(self, method: str, awaitable: Awaitable[T]) -> T:
        started = time.perf_counter()
        code = "OK"
        try:
            return await awaitable
        except ServiceError as err:
            code = err.code.name
            if err.code in ENGINE_DOWN:
                self.metrics.engine_errors.labels(code).inc()
                raise session_error("ENGINE_UNAVAILABLE") from err
            raise
        finally:
            self.metrics.engine_calls.labels(method, code).observe(time.perf_counter() - started)
