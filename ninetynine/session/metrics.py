"""The session's Prometheus metrics (``ninetynine_session_*``; docs/operations.md lists them).

:class:`SessionMetrics` creates every series, labelled ones up front; :func:`run_room_gauge` keeps the
rooms-by-phase gauge current from the shared store.
"""

from __future__ import annotations

import asyncio
import contextlib

from prometheus_client import REGISTRY, CollectorRegistry, Gauge, Histogram
from prometheus_client import Counter as PromCounter

from ninetynine.common.metrics import LATENCY_BUCKETS
from ninetynine.session import expiry
from ninetynine.session.store.base import RoomStore, StoreUnavailable


class SessionMetrics:
    """``ninetynine_session_*`` metrics (docs/operations.md lists them)."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.move_duration = Histogram(
            "ninetynine_session_move_duration_seconds",
            "Move latency through the session: received -> durable, and received -> fanned out.",
            ["mode", "source", "stage"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.deadline_lateness = Histogram(
            "ninetynine_session_deadline_lateness_seconds",
            "Turn deadline due -> timeout move durable.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.rooms = Gauge(
            "ninetynine_session_rooms",
            "Rooms this replica has touched, by phase.",
            ["phase"],
            registry=registry,
        )
        self.subscribers = Gauge(
            "ninetynine_session_subscribers",
            "Open subscriptions on this replica (Subscribe streams and SubscribeMany subscriptions).",
            registry=registry,
        )
        self.shared_messages = PromCounter(
            "ninetynine_session_subscribe_many_messages_total",
            "Messages written on SubscribeMany streams (items / messages = how much they share).",
            registry=registry,
        )
        self.shared_items = PromCounter(
            "ninetynine_session_subscribe_many_items_total",
            "Subscription items written on SubscribeMany streams.",
            registry=registry,
        )
        self.timeouts = PromCounter(
            "ninetynine_session_timeouts_total",
            "Moves played by the timeout policy.",
            ["mode"],
            registry=registry,
        )
        self.eliminations = PromCounter(
            "ninetynine_session_eliminations_total", "Players eliminated.", ["mode"], registry=registry
        )
        self.refusals = PromCounter(
            "ninetynine_session_refusals_total", "Requests refused, by reason.", ["reason"], registry=registry
        )
        self.engine_calls = Histogram(
            "ninetynine_session_engine_call_duration_seconds",
            "Engine RPC latency seen by the session.",
            ["method", "code"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.engine_errors = PromCounter(
            "ninetynine_session_engine_errors_total",
            "Engine calls that failed for lack of an engine (not rule refusals).",
            ["code"],
            registry=registry,
        )
        self.store_errors = PromCounter(
            "ninetynine_session_store_errors_total",
            "Store operations that failed.",
            ["store", "op"],
            registry=registry,
        )
        # Create every labelled series up front so dashboards and rate() see them from the first scrape.
        for mode in ("kr-product", "classic"):
            for source in ("player", "timeout", "bot"):
                for stage in ("durable", "fanout"):
                    self.move_duration.labels(mode, source, stage)
            self.timeouts.labels(mode)
            self.eliminations.labels(mode)
        self.bot_moves = PromCounter(
            "ninetynine_session_bot_moves_total", "Moves played by bots.", registry=registry
        )
        self.rooms_expired = PromCounter(
            "ninetynine_session_rooms_expired_total",
            "Rooms deleted by the expiry sweep (abandoned lobbies, finished rooms past retention).",
            ["reason"],
            registry=registry,
        )
        for reason in expiry.REASONS:
            self.rooms_expired.labels(reason)
        self.retried_calls = PromCounter(
            "ninetynine_session_retried_calls_total",
            "Calls that are a client's retry of an attempt that failed (a replica died under it), by method.",
            ["method"],
            registry=registry,
        )


async def run_room_gauge(
    store: RoomStore, metrics: SessionMetrics, store_kind: str, stopping: asyncio.Event, every_s: float = 10.0
) -> None:
    """Keep ``ninetynine_session_rooms{phase}`` current (every replica reports the shared store)."""
    while not stopping.is_set():
        try:
            for phase, count in (await store.count_rooms()).items():
                metrics.rooms.labels(phase).set(count)
        except StoreUnavailable:
            metrics.store_errors.labels(store_kind, "count").inc()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), every_s)
