"""Per-connection limits: a token-bucket rate limit and the "sustained abuse" detector.

Both take the clock as a parameter (monotonic seconds) so their behaviour can be checked
without sleeping.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

__all__ = ["AbuseMeter", "Limits", "TokenBucket"]


@dataclass(frozen=True)
class Limits:
    """The gateway's per-connection limits (defaults of docs/client-protocol.md §1)."""

    max_message_bytes: int = 4096
    # Larger frames are abuse: error (fatal), goodbye abuse, close 1009.
    hard_max_message_bytes: int = 64 * 1024
    rate_per_second: float = 20.0
    burst: int = 40
    # More refusals than this within abuse_window_seconds: goodbye abuse, close 1008.
    abuse_refusals: int = 100
    abuse_window_seconds: float = 10.0
    heartbeat_seconds: int = 20
    # No client message for idle_factor × heartbeat: goodbye idle.
    idle_factor: int = 3
    # No first message this long after the upgrade: goodbye idle (sockets opened and left silent).
    hello_timeout_seconds: float = 10.0
    send_queue: int = 256
    shutdown_retry_after_ms: int = 500

    @property
    def idle_seconds(self) -> float:
        return float(self.heartbeat_seconds * self.idle_factor)


class TokenBucket:
    """``rate`` tokens per second up to ``burst``; each message takes one."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate = rate
        self.burst = float(burst)
        self._tokens = float(burst)
        self._updated = now

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(self.burst, self._tokens + elapsed * self.rate)
        self._updated = now

    def take(self, now: float) -> bool:
        """Take a token; False when the bucket is empty (the message is refused)."""
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def wait_ms(self, now: float) -> int:
        """0 when a token is there (none is taken), else the milliseconds until one is."""
        self._refill(now)
        return 0 if self._tokens >= 1.0 else self.retry_after_ms(now)

    def retry_after_ms(self, now: float) -> int:
        """How long until the next token (at least 1 ms)."""
        self._refill(now)
        missing = max(0.0, 1.0 - self._tokens)
        return max(1, math.ceil(missing / self.rate * 1000))


class AbuseMeter:
    """Counts refusals in a sliding window; :meth:`refuse` says when the limit is passed."""

    def __init__(self, limit: int, window_seconds: float) -> None:
        self.limit = limit
        self.window = window_seconds
        self._times: deque[float] = deque()

    def refuse(self, now: float) -> bool:
        """Record one refusal; True when more than ``limit`` happened within the window."""
        self._times.append(now)
        while self._times and self._times[0] <= now - self.window:
            self._times.popleft()
        return len(self._times) > self.limit
