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
from ninetynine.session import games, rooms
from ninetynine.session.enginecalls import EngineCalls
from ninetynine.session.play import advance
from ninetynine.session.roomcache import RoomCache, Step, mode_of, now_ms
from ninetynine.session.store.base import StoreUnavailable
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

log = get_logger(__name__)

DEFAULT_TURN_SECONDS = games.DEFAULT_TURN_SECONDS
# A bot's turn: long enough for people at the table to follow its move (about a second each).
DEFAULT_BOT_THINK_MS = 1000
# How long a replica's claim on a due deadline lasts. If the replica dies while firing it, another
# replica fires that deadline only once the claim has run out, so this bounds how late a deadline
# can be after a crash (issue 7 asks for 2 s). A fire that outlasts it may be claimed again; the
# second firing finds the turn moved on and writes nothing.
DEFAULT_LEASE_MS = 1000
SHORT_TURN_SECONDS = 3  # after 3 timeouts in a row, and for players who left (spec §8.5)
TIMEOUTS_BEFORE_SHORT = 3


turn_seconds = games.turn_seconds


class TurnClock:
    """The deadline of the current turn, set once where it is enforced and announced as set.

    ``bot_think_ms`` is a bot's whole turn: it plays once that much has passed since its turn
    began. ``time_scale`` multiplies human turns (tests compress time).
    """

    def __init__(self, bot_think_ms: int, time_scale: float) -> None:
        self.bot_think_ms = bot_think_ms
        self.time_scale = time_scale

    def announce(self, doc: doc_pb.RoomDocument, events: Iterable[pb.RoomEvent]) -> None:
        """Write the room's deadline into the events among ``events`` that announce its decision.

        The rules' events carry the plain deadline; the one the scheduler fires at (a bot's pace,
        the 3 s rule, the time scale) is the document's, which views carry too.
        """
        if doc.deadline_ms:
            games.of(doc).announce(doc, events)

    def _due(self, doc: doc_pb.RoomDocument, decision: games.Decision, now: int) -> tuple[int, bool]:
        """When ``decision`` is due, and whether a bot owes it."""
        seat = rooms.seat_of(doc, decision.player_id)
        if seat.bot:
            if not decision.shortens:
                # A decision several owe at once shares one deadline, whose timeout moves for every
                # seat still owing: a bot is due before it (even when it has passed), so it answers first.
                shared = (decision.started_at_ms or now) + round(decision.seconds * 1000 * self.time_scale)
                return min(now + self.bot_think_ms, shared - 1), True
            return now + self.bot_think_ms, True
        seconds = decision.seconds
        if decision.shortens and (seat.left or seat.consecutive_timeouts >= TIMEOUTS_BEFORE_SHORT):
            seconds = min(seconds, SHORT_TURN_SECONDS)
        return (decision.started_at_ms or now) + round(seconds * 1000 * self.time_scale), False

    def set_deadline(self, doc: doc_pb.RoomDocument, now: int, *, force: bool) -> None:
        """The earliest deadline of the decisions owed now (one per player who owes one)."""
        game = games.of(doc)
        decisions = game.decisions(doc) if doc.phase == pb.ROOM_PHASE_PLAYING else ()
        if not decisions:
            doc.deadline_ms = 0
            doc.deadline_kind = doc_pb.DEADLINE_KIND_UNSPECIFIED
            doc.deadline_player_id = ""
            doc.shown_deadline_ms = 0
            return
        seq = game.state_seq(doc)
        if not force and doc.deadline_ms and doc.deadline_state_seq == seq:
            return  # same decisions: keep the running timer
        dues = [(self._due(doc, d, now), d) for d in decisions]
        (doc.deadline_ms, bot), first = min(dues, key=lambda due: due[0][0])
        # Several owe a decision at once: clients are shown when the last of them is due.
        doc.shown_deadline_ms = max(due[0][0] for due in dues) if len(dues) > 1 else 0
        doc.deadline_state_seq = seq
        doc.deadline_player_id = first.player_id
        doc.turn_started_at_ms = first.started_at_ms or now
        doc.deadline_kind = doc_pb.DEADLINE_KIND_BOT if bot else doc_pb.DEADLINE_KIND_TURN


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
        # A shared store (Redis) is polled for what other replicas change; a store only this
        # replica writes (SQLite) is asked only after this replica's own claims and releases.
        self.poll_ms = poll_ms
        self.polls_store = not cache.authoritative
        self._stopping = stopping
        self._fires: set[asyncio.Task[None]] = set()
        # False: the store's earliest deadline may have moved in a way the room cache did not see.
        self._known = False

    async def run(self) -> None:
        """Fire due deadlines until ``stopping`` is set; survives store and engine outages.

        The store is asked for the earliest deadline when it may have changed in a way the room
        cache did not see: at start, after each claim and release of this replica, and, on a shared
        store, every ``poll_ms`` (other replicas' commits, expired claims). A commit here only
        brings a deadline sooner or later; the cache wakes the scheduler for a sooner one only
        (:meth:`RoomCache.await_deadline`), and a later one leaves the earliest known deadline too
        early, which costs one look at the store when it comes round. So a replica on its own store
        does no work while no deadline is due, and none for a move that does not bring one sooner.
        """
        wake = self.cache.changed
        next_due: int | None = None
        while not self._stopping.is_set():
            # Cleared before the store is asked: a wake during the ask is not lost.
            wake.clear()
            retry_ms: int | None = None
            if not self._known:
                self._known = True  # a release during the ask sets it back
                try:
                    next_due = await self.store.next_deadline_ms()
                except StoreUnavailable:
                    self.metrics.store_errors.labels(self.cache.store_kind, "next_deadline").inc()
                    self._known = False
                    next_due, retry_ms = None, self.poll_ms
            sooner = self.cache.take_sooner_deadline()
            if sooner is not None and (next_due is None or sooner < next_due):
                next_due = sooner
            wait_ms = None if next_due is None else max(0, next_due - now_ms())
            if self.polls_store or retry_ms is not None:
                wait_ms = self.poll_ms if wait_ms is None else min(wait_ms, self.poll_ms)
            if wait_ms != 0:
                self.cache.await_deadline(next_due)
                try:
                    async with asyncio.timeout(None if wait_ms is None else wait_ms / 1000):
                        await wake.wait()
                except TimeoutError:
                    # The earliest known deadline came round (it may have moved since: ask), or the poll.
                    self._known = False
                continue
            try:
                claimed = await self.store.claim_due(now_ms(), self.owner, self.lease_ms, 200)
            except StoreUnavailable:
                self.metrics.store_errors.labels(self.cache.store_kind, "claim").inc()
                await asyncio.sleep(self.poll_ms / 1000)
                continue
            self._known = False
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
            game = games.of(doc)
            if (
                doc.phase != pb.ROOM_PHASE_PLAYING
                or doc.deadline_ms != due
                or doc.deadline_state_seq != game.state_seq(doc)
            ):
                return None  # the turn moved on since the claim
            current = doc.deadline_player_id or next(iter(game.decisions(doc)), games.NOBODY).player_id
            if not game.owes(doc, current):
                return None
            seat = rooms.seat_of(doc, current)
            wire = self.cache.wire_at(room_id, doc.state)
            if seat.bot:
                action = game.bot_move(self.cache.game_at(room_id, doc), current)
                applied = await self.engine.apply(doc, wire, current, action, now)
                out = Step(source="bot")
                out.add_game(applied.events)
                advance(doc, current, action, "bot", now)
                fired["kind"] = "bot"
                return out
            timed = await game.timeout(self.engine, doc, wire, current, now)
            moves = game.timed_moves(timed)
            out = Step(source="timeout")
            for player, action in moves:
                moved = rooms.seat_of(doc, player)
                moved.consecutive_timeouts += 1
                announced = pb.TimeoutApplied(
                    player_id=player, action=action, consecutive=moved.consecutive_timeouts
                )
                public = game.public_action(action)
                if public is None:
                    out.add(pb.RoomEvent(timeout_applied=announced))
                else:
                    out.add(pb.RoomEvent(timeout_applied=announced), "only", player)
                    shown = pb.TimeoutApplied(
                        player_id=player, action=public, consecutive=announced.consecutive
                    )
                    out.add(pb.RoomEvent(timeout_applied=shown), "except", player)
            out.add_game(timed.events)
            for player, action in moves:
                advance(doc, player, action, "timeout", now)
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
            # The room is due at its deadline again, not at the claim's end: ask the store.
            self._known = False
            self.cache.changed.set()
            return
        mode = mode_of(loaded.doc)
        if fired.get("kind") == "timeout":
            self.metrics.timeouts.labels(mode).inc()
            self.metrics.deadline_lateness.observe(max(0, now_ms() - due) / 1000)
        else:
            self.metrics.bot_moves.inc()
