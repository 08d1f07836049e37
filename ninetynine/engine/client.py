"""A small typed asyncio client for the engine service (used by the session service and other teams).

    async with EngineClient("127.0.0.1:50051") as engine:
        setup = await engine.setup(["ann", "bob"], seed=7)
        view = await engine.view(setup.state, "ann")
        play = view.view.legal_plays[0]
        applied = await engine.apply(setup.state, "ann", play.action, expected_seq=setup.state.seq)

Every call has a deadline (``timeout`` seconds, 1 s by default). A call that fails with
UNAVAILABLE (engine restarting, connection not up yet) is retried a bounded number of times
with exponential backoff; the engine is stateless, so repeating a call is always safe. Any other
failure is raised as :class:`~ninetynine.common.errors.ServiceError` carrying the engine's reason
code (``OVER_99``, ``STALE_STATE``...), metadata and both language texts. The current request id
(``x-request-id``) is forwarded on every call.

The session holds an ``EngineClient`` whichever engine answers: the in-process
:class:`ninetynine.engine.local.LocalEngine` is this client over the engine's handlers.

Apply and Timeout travel on a few shared ``ApplyMany`` streams (opened on first use and again
after a break; a call whose stream broke before its answer is sent again on a new one), because a
message on an open stream costs both ends about half the CPU of a unary call (``bench
grpc_wake``); their answers and failures are those of the unary calls. The other calls are unary.

A caller that already holds the state's encoding (a stored room document) passes it as
``state_wire`` to :meth:`EngineClient.apply` / :meth:`EngineClient.timeout`: the request is
assembled from those bytes instead of encoding the state again. With ``state_out`` the new state
is written into that message: copied from the parsed response (a copy costs less than parsing the
state there), or converted straight into it by :class:`~ninetynine.engine.local.LocalEngine`; the
response's own ``state`` is then not to be read (in-process it stays empty).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import grpc
import grpc.aio

from ninetynine.common.context import accept_language, request_id
from ninetynine.common.errors import Lang
from ninetynine.common.grpcclient import create_channel
from ninetynine.common.sharedcalls import AnsweredCall, AnsweringPool, failure_error
from ninetynine.common.wire import length_delimited, varint
from ninetynine.engine.errors import ENGINE_DOMAIN, from_rpc_error
from ninetynine.engine.frames import frame_call
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from ninetynine.engine.v1 import game_pb2, rules_pb2, state_pb2, trick_pb2

Resp = TypeVar("Resp")
Moved = TypeVar("Moved", pb.ApplyResponse, pb.TimeoutResponse)

_SERVICE = pb.DESCRIPTOR.services_by_name["EngineService"].full_name
# Where the state sits in each request (by the descriptors, not by hand).
_APPLY_STATE = pb.ApplyRequest.DESCRIPTOR.fields_by_name["state"].number
_TIMEOUT_STATE = pb.TimeoutRequest.DESCRIPTOR.fields_by_name["state"].number
_MANY = pb.ApplyManyRequest.DESCRIPTOR.fields_by_name
_MANY_CALL_ID_KEY = varint(_MANY["call_id"].number << 3)  # a varint field's key
_MANY_APPLY = _MANY["apply"].number
_MANY_TIMEOUT = _MANY["timeout"].number
_MANY_REQUEST_ID = _MANY["request_id"].number
_MANY_LANG = _MANY["accept_language"].number

DEFAULT_TIMEOUT = 1.0
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF = 0.05  # seconds before the first retry; doubled each time
# grpc's default reconnect backoff grows to 120 s: after a long engine outage the caller would
# keep failing fast for minutes after the engine is back. Engines are cheap to reconnect to.
RECONNECT_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


class _MovesCall(AnsweredCall[bytes, pb.ApplyManyResponse]):
    """One ApplyMany call and the moves waiting for their answers on it."""

    kind = "engine"


class EngineClient:
    """Async client of ``ninetynine.engine.v1.EngineService``."""

    def __init__(
        self,
        target: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff: float = DEFAULT_BACKOFF,
        lang: Lang | None = None,
        stub: Any = None,
        streams: int = 2,
        frames: str = "",
    ) -> None:
        """``stub`` (anything with the five async stub methods) replaces the channel to ``target``
        (and Apply and Timeout are then unary calls of it); ``streams``: shared ApplyMany calls;
        ``frames``: the engine's frames socket, which then carries them
        (:mod:`ninetynine.engine.frames`)."""
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self.target = target
        self.call_timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.lang = lang
        self._channel: grpc.aio.Channel | None = None
        self._moves: AnsweringPool[bytes, pb.ApplyManyResponse] | None = None
        if stub is None:
            self._channel = channel = create_channel(target, options=RECONNECT_OPTIONS)
            stub = pb_grpc.EngineServiceStub(channel)
            # Requests as bytes (assembled from held bytes), answers parsed once.
            apply_many = channel.stream_stream(
                f"/{_SERVICE}/ApplyMany",
                request_serializer=None,
                response_deserializer=pb.ApplyManyResponse.FromString,
            )
            metadata = (("accept-language", lang),) if lang else None
            method: Callable[[AsyncIterator[bytes]], Any] = (
                frame_call(frames) if frames else lambda requests: apply_many(requests, metadata=metadata)
            )

            def open_call(index: int) -> AnsweredCall[bytes, pb.ApplyManyResponse]:
                return _MovesCall(method, index)

            self._moves = AnsweringPool(open_call, streams)
        self._stub = stub

    async def __aenter__(self) -> EngineClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._moves is not None:
            await self._moves.close()
        if self._channel is not None:
            await self._channel.close(None)

    # -- calls -----------------------------------------------------------------------------------

    async def setup(
        self,
        player_ids: Sequence[str],
        options: game_pb2.Options | None = None,
        *,
        seed: int | None = None,
        display_names: Mapping[str, str] | None = None,
        now_ms: int = 0,
        rules: str = "",
        overrides: Mapping[str, str] | None = None,
        game: str = "",
        trick_options: trick_pb2.TrickOptions | None = None,
    ) -> pb.SetupResponse:
        """A new game; ``seed=None`` lets the engine draw one. ``rules`` names a preset (see
        :meth:`list_rules`; empty: the mode of ``options``), ``overrides`` a house-rules sheet;
        ``game`` the game kind (empty: the adding game; ``"trick"`` with its ``trick_options``)."""
        request = pb.SetupRequest(
            player_ids=list(player_ids),
            options=options,
            display_names=dict(display_names or {}),
            now_ms=now_ms,
            rules=rules,
            overrides=dict(overrides or {}),
            game=game,
            trick_options=trick_options,
        )
        if seed is not None:
            request.seed = seed
        return await self._call(self._stub.Setup, request)

    async def apply(
        self,
        state: state_pb2.State,
        player_id: str,
        action: game_pb2.Action,
        *,
        expected_seq: int | None = None,
        now_ms: int = 0,
        state_wire: bytes | None = None,
        state_out: state_pb2.State | None = None,
    ) -> pb.ApplyResponse:
        """Play ``action`` for ``player_id``; with ``expected_seq`` a stale state is refused (ABORTED).

        ``state_wire``: ``state`` as already encoded; ``state_out``: where the new state goes
        (see the module doc).
        """
        request = pb.ApplyRequest(player_id=player_id, action=action, now_ms=now_ms)
        if expected_seq is not None:
            request.expected_seq = expected_seq
        if self._moves is None:
            request.state.CopyFrom(state)
            applied: pb.ApplyResponse = await self._call(self._stub.Apply, request)
            return self._into(applied, state_out)
        wire = state.SerializeToString() if state_wire is None else state_wire
        data = length_delimited(_APPLY_STATE, wire) + request.SerializeToString()
        answer = await self._move(_MANY_APPLY, data)
        return self._into(answer.applied, state_out)

    async def list_rules(self) -> rules_pb2.ListRulesResponse:
        """Every preset ``setup(rules=...)`` takes, with its one-line summaries and rule set."""
        return await self._call(self._stub.ListRules, rules_pb2.ListRulesRequest())

    async def view(self, state: state_pb2.State, viewer_id: str = "") -> pb.ViewResponse:
        """What ``viewer_id`` may see (empty = spectator)."""
        return await self._call(self._stub.View, pb.ViewRequest(state=state, viewer_id=viewer_id))

    async def timeout(
        self,
        state: state_pb2.State,
        *,
        expected_seq: int | None = None,
        now_ms: int = 0,
        state_wire: bytes | None = None,
        state_out: state_pb2.State | None = None,
    ) -> pb.TimeoutResponse:
        """Play the §8.5 automatic move for the current player (``state_wire``, ``state_out``: as
        :meth:`apply`)."""
        request = pb.TimeoutRequest(now_ms=now_ms)
        if expected_seq is not None:
            request.expected_seq = expected_seq
        if self._moves is None:
            request.state.CopyFrom(state)
            timed: pb.TimeoutResponse = await self._call(self._stub.Timeout, request)
            return self._into(timed, state_out)
        wire = state.SerializeToString() if state_wire is None else state_wire
        data = length_delimited(_TIMEOUT_STATE, wire) + request.SerializeToString()
        answer = await self._move(_MANY_TIMEOUT, data)
        return self._into(answer.timed_out, state_out)

    # -- plumbing --------------------------------------------------------------------------------

    @staticmethod
    def _into(response: Moved, state_out: state_pb2.State | None) -> Moved:
        """``response``, its state copied into ``state_out`` (when given)."""
        if state_out is not None:
            state_out.CopyFrom(response.state)
        return response

    async def _move(self, kind: int, call: bytes) -> pb.ApplyManyResponse:
        """The answer to an Apply or Timeout (``kind``: its ApplyManyRequest field) on a shared
        stream within the call's deadline; a failure raised as the unary call's would be."""
        assert self._moves is not None
        # The request id and language of the caller's request go with the call, as a unary call's
        # metadata would carry them. Field order does not matter on the wire: the id goes first.
        rest = length_delimited(kind, call)
        rid = request_id()
        if rid:
            rest += length_delimited(_MANY_REQUEST_ID, rid.encode())
        lang = accept_language() or self.lang or ""
        if lang:
            rest += length_delimited(_MANY_LANG, lang.encode())

        def message(call_id: int, _elsewhere: bool) -> bytes:  # engine answers come on the call only
            return _MANY_CALL_ID_KEY + varint(call_id) + rest

        try:
            answer = await self._moves.ask(rid, message, self.call_timeout)
            if answer.WhichOneof("result") == "failure":
                raise failure_error(answer.failure)
        except grpc.aio.AioRpcError as err:
            raise from_rpc_error(err, default_domain=ENGINE_DOMAIN) from err
        return answer

    async def _call(self, method: Callable[..., Awaitable[Resp]], request: object) -> Resp:
        metadata = (("accept-language", self.lang),) if self.lang else None
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            try:
                return await method(request, timeout=self.call_timeout, metadata=metadata)
            except grpc.aio.AioRpcError as err:
                if err.code() is grpc.StatusCode.UNAVAILABLE and attempt < self.attempts:
                    await asyncio.sleep(delay)
                    delay *= 2
                    continue
                raise from_rpc_error(err, default_domain=ENGINE_DOMAIN) from err
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover
