"""The rules engine inside the caller's process (``ninety-nine session --engine local``).

:class:`LocalEngine` is :class:`~ninetynine.engine.client.EngineClient` over a stand-in for its gRPC
stub that hands each request to the same :class:`~ninetynine.engine.handlers.EngineHandlers` the
engine server runs. So the requests, responses and refusals (``ServiceError`` with the engine's
code, reason, domain, metadata and both texts) are what the remote engine would have sent,
without the gRPC hop (~1.6 ms and ~1 ms of CPU per move under load, mostly gRPC on both sides).

    async with LocalEngine() as engine:
        setup = await engine.setup(["ann", "bob"], seed=7)

What it cannot do: be down. There is no channel, so the client's deadline and retries never come
into play; a call runs the rules on the caller's event loop (tens to hundreds of microseconds).
Canonical-log fields are not bound (they would overwrite the calling RPC's), and the rules
counters go to ``metrics`` (by default counted but not exported).
"""

from __future__ import annotations

from typing import Any

from ninetynine.common.context import ACCEPT_LANGUAGE_HEADER, accept_language
from ninetynine.common.errors import Lang, MetadataLike, lang_from_metadata
from ninetynine.engine.client import EngineClient
from ninetynine.engine.handlers import EngineHandlers, RulesMetrics
from ninetynine.engine.v1 import engine_service_pb2 as pb

__all__ = ["LOCAL_TARGET", "LocalEngine"]

# The --engine value that selects this engine instead of a host:port.
LOCAL_TARGET = "local"


class _HandlersStub:
    """The four methods of ``EngineServiceStub`` the client calls (hence their names), answered by
    the handlers."""

    def __init__(self, handlers: EngineHandlers) -> None:
        self.handlers = handlers

    async def Setup(self, request: pb.SetupRequest, **_: Any) -> pb.SetupResponse:
        return self.handlers.setup(request)

    async def Apply(self, request: pb.ApplyRequest, **_: Any) -> pb.ApplyResponse:
        return self.handlers.apply(request)

    async def View(
        self, request: pb.ViewRequest, *, metadata: MetadataLike = None, **_: Any
    ) -> pb.ViewResponse:
        # The client sends its own language as metadata, else its channel forwards the current
        # request's accept-language: the same here.
        return self.handlers.view(
            request, lang_from_metadata(metadata or ((ACCEPT_LANGUAGE_HEADER, accept_language()),))
        )

    async def Timeout(self, request: pb.TimeoutRequest, **_: Any) -> pb.TimeoutResponse:
        return self.handlers.timeout(request)


class LocalEngine(EngineClient):
    """:class:`EngineClient` whose calls run the engine's handlers in this process."""

    def __init__(self, *, metrics: RulesMetrics | None = None, lang: Lang | None = None) -> None:
        handlers = EngineHandlers(metrics or RulesMetrics.create(None), log_fields=False)
        super().__init__(LOCAL_TARGET, lang=lang, stub=_HandlersStub(handlers))
