"""The session's calls to the engine: timed per method, and an engine outage refused as ENGINE_UNAVAILABLE.

Rule refusals (``OVER_99``, ``STALE_STATE``...) pass through as the engine raised them; only the
lack of an engine (UNAVAILABLE, DEADLINE_EXCEEDED) becomes the session's own refusal.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Mapping
from typing import TypeVar

import grpc

from ninetynine.common.errors import ServiceError
from ninetynine.engine.client import EngineClient
from ninetynine.engine.v1 import engine_service_pb2 as engine_pb
from ninetynine.engine.v1 import game_pb2, state_pb2, trick_pb2
from ninetynine.session.errors import session_error
from ninetynine.session.metrics import SessionMetrics
from ninetynine.session.v1 import room_document_pb2 as doc_pb

ENGINE_DOWN = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def state_key(state: state_pb2.State) -> tuple[int, str]:
    """What tells two states of a room apart: the game's move counter and seed commitment (a trick
    match keeps its whole state in ``State.trick``, every other field unset)."""
    if state.HasField("trick"):
        return state.trick.seq, state.trick.seed_commitment
    return state.seq, state.seed_commitment


T = TypeVar("T")


class EngineCalls:
    """:class:`EngineClient` as the session uses it: every call observed in ``engine_calls``."""

    def __init__(self, client: EngineClient, metrics: SessionMetrics) -> None:
        self.client = client
        self.metrics = metrics

    async def setup(self, doc: doc_pb.RoomDocument, now: int) -> engine_pb.SetupResponse:
        """A new game for the room's seats (a fresh seed), its first turn starting ``now``."""
        seats = doc.seats
        return await self._call(
            "Setup",
            self.client.setup(
                [s.player_id for s in seats],
                doc.options,
                seed=secrets.randbits(64),
                display_names={s.player_id: s.name for s in seats},
                now_ms=now,
                rules=doc.rules,
                overrides=doc.overrides,
            ),
        )

    async def check_rules(self, rules: str, overrides: Mapping[str, str], options: game_pb2.Options) -> None:
        """Refuse, with the engine's own reason, a preset and house rules it would refuse at Setup.

        A trial Setup of two players (every rule set takes two): the engine resolves exactly what
        StartGame will send it, so the room is refused when it is created instead of when it starts.
        The engine has no call that only checks, so its games-set-up counter counts these too.
        """
        await self._call(
            "Setup",
            self.client.setup(["check-1", "check-2"], options, seed=0, rules=rules, overrides=overrides),
        )

    async def setup_trick(self, doc: doc_pb.RoomDocument, now: int) -> engine_pb.SetupResponse:
        """A new trick match for the room's three seats (a fresh seed)."""
        seats = doc.seats
        setup = self.client.setup(
            [s.player_id for s in seats],
            seed=secrets.randbits(64),
            display_names={s.player_id: s.name for s in seats},
            now_ms=now,
            game="trick",
            trick_options=doc.trick_options,
        )
        return await self._call("Setup", setup)

    async def check_trick(
        self, options: trick_pb2.TrickOptions, rules: str, overrides: Mapping[str, str]
    ) -> None:
        """Refuse, with the engine's own reason, what a trick match's Setup would refuse (a trial
        Setup of three players, as :meth:`check_rules` does for the adding game)."""
        setup = self.client.setup(
            ["check-1", "check-2", "check-3"],
            seed=0,
            rules=rules,
            overrides=overrides,
            game="trick",
            trick_options=options,
        )
        await self._call("Setup", setup)

    async def apply(
        self,
        doc: doc_pb.RoomDocument,
        state_wire: bytes | None,
        player_id: str,
        action: game_pb2.Action,
        now: int,
    ) -> engine_pb.ApplyResponse:
        """``player_id`` plays ``action`` on ``doc.state`` (refused as stale once the state moved on).

        ``state_wire`` is ``doc.state`` as committed (sent as it is, not encoded again); the new state
        replaces ``doc.state`` (moved there from the parsed response, or converted there by the
        in-process engine), the response carries the rest.
        """
        state = doc.state
        return await self._call(
            "Apply",
            self.client.apply(
                state,
                player_id,
                action,
                expected_seq=state_key(state)[0],
                now_ms=now,
                state_wire=state_wire,
                state_out=state,
            ),
        )

    async def timeout(
        self, doc: doc_pb.RoomDocument, state_wire: bytes | None, now: int
    ) -> engine_pb.TimeoutResponse:
        """The §8.5 automatic move of the current player (the new state as :meth:`apply` puts it)."""
        state = doc.state
        return await self._call(
            "Timeout",
            self.client.timeout(
                state,
                expected_seq=state_key(state)[0],
                now_ms=now,
                state_wire=state_wire,
                state_out=state,
            ),
        )

    async def _call(self, method: str, awaitable: Awaitable[T]) -> T:
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
