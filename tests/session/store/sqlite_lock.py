"""Another writer holding a SQLite file's write lock, so that a store's commits wait for it.

Tests use it to hold plays in flight for real (no mock): the session's commit queues behind the
lock until the test releases it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


class StoreLock:
    """``BEGIN IMMEDIATE`` on a connection of its own; :meth:`release` rolls it back."""

    def __init__(self, db: Path | str) -> None:
        self.conn = sqlite3.connect(db, isolation_level=None)
        self.conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()
