"""A gateway relay's room stream read as an async iterator, for tests that follow one by hand.

:meth:`SessionRelay.subscribe` hands each response to a callback; here they are queued and
yielded in order, and the stream's end raises what it ended with, as ``Subscribe`` would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from ninetynine.gateway.relay import SessionRelay
from ninetynine.session.v1 import session_service_pb2 as spb


async def room_stream(
    relay: SessionRelay, request: spb.SubscribeRequest, lang: str
) -> AsyncGenerator[spb.SubscribeResponse, None]:
    """The responses of ``request``'s room stream; closed when the iterator is."""
    responses: asyncio.Queue[spb.SubscribeResponse] = asyncio.Queue()
    subscription = relay.subscribe(request, lang, responses.put_nowait)
    try:
        while True:
            if responses.empty():
                got: asyncio.Future[spb.SubscribeResponse] = asyncio.ensure_future(responses.get())
                waiting: list[asyncio.Future[Any]] = [got, subscription.ended]
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if not got.done():
                    got.cancel()
                    subscription.ended.result()  # raises the stream's error
                    return
                yield got.result()
            else:
                yield responses.get_nowait()
    finally:
        subscription.close()
