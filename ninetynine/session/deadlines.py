"""Turn deadlines: how long a turn lasts (:class:`TurnClock`), and who plays once it ran out.

The commit pipeline asks :class:`TurnClock` for the deadline of every room version it writes: a
human's turn lasts the room's ``turn_seconds`` (3 s once the seat timed out three times in a row or
left, spec §8.5), a bot's the bot delay. Deadlines live in the store. :meth:`Deadlines.run` sleeps
until the earliest one, claims due rooms (exactly one replica wins each claim) and fires them: a
bot's turn plays the bot's move, a human's turn plays the engine's §8.5 timeout move.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from ninetynine.common.errors import ServiceError
from ninetynine.common.logging import get_logger
from ninetynine.engine.convert import action_to_proto
from ninetynine.session import rooms
from ninetynine.session.bots import bot_action
from ninetynine.session.enginecalls import EngineCalls
from ninetynine.session.play import advance
from ninetynine.session.roomcache import RoomCache, Step, mode_of, now_ms
from ninetynine.session.store.base import StoreUnavailable
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

log = get_logger(__name__)

DEFAULT_TURN_SECONDS = 15
# A bot's turn: long enough for people at the table to follow its move (about a second each).
DEFAULT_BOT_THINK_MS = 1000
# How long a replica's claim on a due deadline lasts. If the replica dies while firing it, another
# replica fires that deadline only once the claim has run out, so this bounds how late a deadline
# can be after a crash (issue 7 asks for 2 s). A fire that outlasts it may be claimed again; the
# second firing finds the turn moved on and writes nothing.
DEFAULT_LEASE_MS = 1000
SHORT_TURN_SECONDS = 3  # after 3 timeouts in a row, and for players who left (spec §8.5)
TIMEOUTS_BEFORE_SHORT = 3


def turn_seconds(doc: doc_pb.RoomDocument) -> int:
    return doc.options.turn_seconds if doc.options.HasField("turn_seconds") else DEFAULT_TURN_SECONDS


class TurnClock:
    """The deadline of the current turn, set once where it is enforced and announced as set.

    ``bot_think_ms`` is a bot's whole turn: it plays once that much has passed since its turn
    began. ``time_scale`` multiplies human turns (tests compress time).
    """

    def __init__(self, bot_think_ms: int, time_scale: float) -> None:
        self.bot_think_ms = bot_think_ms
        self.time_scale = time_scale

    def announce(self, doc: doc_pb.RoomDocument, events: Iterable[pb.RoomEvent]) -> None:
        """Write the room's deadline into the ``turnStarted`` of its current turn among ``events``.

        The rules' event carries the plain ``turn_seconds`` deadline; the one the scheduler fires
        at (a bot's pace, the 3 s rule, the time scale) is the document's, which views carry too.
        """
        if not doc.deadline_ms:
            return
        for event in events:
            if event.HasField("game") and event.game.HasField("turn_started"):
                turn = event.game.turn_started
                if turn.player_id == doc.state.current:
                    turn.deadline_ms = doc.deadline_ms

    def set_deadline(self, doc: doc_pb.RoomDocument, now: int, *, force: bool) -> None:
        if doc.phase != pb.ROOM_PHASE_PLAYING:
            doc.deadline_ms = 0
            doc.deadline_kind = doc_pb.DEADLINE_KIND_UNSPECIFIED
            return
        state = doc.state
        if not force and doc.deadline_ms and doc.deadline_state_seq == state.seq:
            return  # same turn: keep the running timer
        seat = rooms.seat_of(doc, state.current)
        doc.deadline_state_seq = state.seq
        doc.turn_started_at_ms = state.turn_started_at_ms or now
        if seat.bot:
            doc.deadline_kind = doc_pb.DEADLINE_KIND_BOT
            doc.deadline_ms = now + self.bot_think_ms
            return
        seconds = turn_seconds(doc)
        if seat.left or seat.consecutive_timeouts >= TIMEOUTS_BEFORE_SHORT:
            seconds = min(seconds, SHORT_TURN_SECONDS)
        doc.deadline_kind = doc_pb.DEADLINE_KIND_TURN
        doc.deadline_ms = doc.turn_started_at_ms + round(seconds * 1000 * self.time_scale)


class Deadlines:
    """The deadline scheduler of one replica."""

    def __init__(
        self,
        cache: RoomCache,
        engine: EngineCalls,
        *,
        owner: str,
        lease_ms: int,
        poll_ms: int,
        stopping: asyncio.Event,
    ) -> None:
        self.cache = cache
        self.store = cache.store
        self.metrics = cache.metrics
        self.engine = engine
        self.owner = owner
        self.lease_ms = lease_ms
        self.poll_ms = poll_ms
        self._stopping = stopping
        self._fires: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Fire due deadlines until ``stopping`` is set; survives store and engine outages.

        The store is asked for the earliest deadline when it may have changed in a way this
        replica did not see: at start, after each claim, and every ``poll_ms`` (other replicas'
        commits, expired claims). A commit here only brings a deadline sooner or later; the sooner
        ones come from the room cache, and a later one leaves the earliest known deadline too early,
        which costs one look at the store when it comes round. Not asking the store on every commit
        saves a round trip to it per move.
        """
        wake = self.cache.changed
        next_due: int | None = None
        known = False
        while not self._stopping.is_set():
            if not known:
                try:
                    next_due = await self.store.next_deadline_ms()
                    known = True
                except StoreUnavailable:
                    self.metrics.store_errors.labels(self.cache.store_kind, "next_deadline").inc()
                    next_due = None
            wake.clear()
            sooner = self.cache.take_sooner_deadline()
            if sooner is not None and (next_due is None or sooner < next_due):
                next_due = sooner
            now = now_ms()
            wait_ms = self.poll_ms if next_due is None else max(0, min(next_due - now, self.poll_ms))
            if wait_ms:
                try:
                    await asyncio.wait_for(wake.wait(), wait_ms / 1000)
                except TimeoutError:
                    # The earliest known deadline came round (it may have moved since: ask), or the poll.
                    known = False
                continue
            try:
                claimed = await self.store.claim_due(now_ms(), self.owner, self.lease_ms, 200)
            except StoreUnavailable:
                self.metrics.store_errors.labels(self.cache.store_kind, "claim").inc()
                await asyncio.sleep(self.poll_ms / 1000)
                continue
            known = False
            for room_id, due in claimed:
                task = asyncio.create_task(self._fire(room_id, due))
                self._fires.add(task)
                task.add_done_callback(self._fires.discard)
            if not claimed:
                await asyncio.sleep(0.005)  # a lease held by another replica: don't spin

    async def finish(self) -> None:
        """Wait for the deadlines being fired (after ``stopping`` is set)."""
        if self._fires:
            await asyncio.gather(*self._fires, return_exceptions=True)

    async def _fire(self, room_id: str, due: int) -> None:
        fired: dict[str, object] = {}

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step | None:
            if (
                doc.phase != pb.ROOM_PHASE_PLAYING
                or doc.deadline_ms != due
                or doc.deadline_state_seq != doc.state.seq
            ):
                return None  # the turn moved on since the claim
            current = doc.state.current
            seat = rooms.seat_of(doc, current)
            if seat.bot:
                action = action_to_proto(bot_action(self.cache.game_at(room_id, doc.state)))
                wire = self.cache.wire_at(room_id, doc.state)
                applied = await self.engine.apply(doc, wire, current, action, now)
                out = Step(source="bot")
                out.add_game(applied.events)
                advance(doc, current, action, "bot", now)
                fired["kind"] = "bot"
                return out
            timed = await self.engine.timeout(doc, self.cache.wire_at(room_id, doc.state), now)
            seat.consecutive_timeouts += 1
            out = Step(source="timeout")
            out.add(
                pb.RoomEvent(
                    timeout_applied=pb.TimeoutApplied(
                        player_id=current,
                        action=timed.action,
                        consecutive=seat.consecutive_timeouts,
                    )
                )
            )
            out.add_game(timed.events)
            advance(doc, current, timed.action, "timeout", now)
            fired["kind"] = "timeout"
            return out

        try:
            loaded, step_out = await self.cache.mutate(room_id, step)
        except ServiceError as err:
            # Engine or store down: keep the claim; its lease runs out and the deadline fires again.
            log.warning("deadline not fired", room_id=room_id, reason=err.reason)
            return
        except Exception:
            log.exception("deadline failed", room_id=room_id)
            return
        if not step_out.events:
            with contextlib.suppress(StoreUnavailable):
                await self.store.release(room_id, self.owner)
            return
        mode = mode_of(loaded.doc)
        if fired.get("kind") == "timeout":
            self.metrics.timeouts.labels(mode).inc()
            self.metrics.deadline_lateness.observe(max(0, now_ms() - due) / 1000)
        else:
            self.metrics.bot_moves.inc()
