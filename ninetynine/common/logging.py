"""structlog set-up shared by every service: one call at start-up, one format everywhere.

``configure_logging("engine")`` makes every line carry an ISO-8601 UTC timestamp, the level, the
``service`` name and whatever is bound in structlog's contextvars (``request_id``, ``method``...).
Lines are JSON (one object per line) when stderr is not a terminal -- containers, CI, files -- and
human-readable console output on a terminal. Records from the standard library's ``logging``
(grpc, aiohttp, asyncio) go through the same processors and renderer, so one stream has one format.

The function is idempotent and may be called again (tests do) to change the level, the format or
the stream: the processors consult the current settings on every line, so loggers created or cached
before the call follow the new settings too.

Speed: JSON is rendered with orjson (compact separators, UTF-8 kept as is) and the timestamp is
formatted from a per-second cache. :func:`emit_line` writes one event exactly as
``get_logger(name).info(event, **fields)`` would -- same keys, same order, same format -- without
structlog's processor chain; the canonical per-RPC line uses it, since it runs on every call.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

import orjson
import structlog
from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

from ninetynine.common.context import current_scope

__all__ = ["Logger", "configure_logging", "emit_line", "get_logger"]

Logger = FilteringBoundLogger

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


@dataclass
class _Settings:
    service: str = ""
    level: int = logging.INFO
    json: bool = True
    # None means "sys.stderr at the time of writing", so pytest's capture and redirections work.
    stream: TextIO | None = None
    handler: logging.Handler | None = None
    console: structlog.dev.ConsoleRenderer = field(
        default_factory=lambda: structlog.dev.ConsoleRenderer(colors=False)
    )


_settings = _Settings()


class _Sink:
    """A file-like object over the configured stream that writes once per event-loop turn.

    Under load a service logs many lines in one turn of its loop (a canonical line per RPC, per
    client message); one write and one flush per turn instead of one per line spares a system call
    per line. Outside a running loop, at warning and above, and past ``_MAX_PENDING`` characters a
    line goes out at once; what is pending at exit is written by an ``atexit`` hook.
    """

    def __init__(self) -> None:
        self._pending: list[str] = []
        self._size = 0
        self._scheduled_on: asyncio.AbstractEventLoop | None = None

    def write(self, text: str) -> int:
        self._pending.append(text)
        self._size += len(text)
        return len(text)

    def flush(self) -> None:
        """Write what is pending at the end of this loop turn (now, outside a loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush_now()
            return
        if self._size > _MAX_PENDING:
            self.flush_now()
        elif self._scheduled_on is not loop:
            self._scheduled_on = loop
            loop.call_soon(self.flush_now)

    def flush_now(self) -> None:
        self._scheduled_on = None
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._size = 0
        stream = _settings.stream or sys.stderr
        try:
            stream.write(text)
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader went away, or the stream was closed
            pass


# Pending log text past which a line is written at once instead of at the end of the loop turn.
_MAX_PENDING = 256 * 1024
_SINK = _Sink()
atexit.register(_SINK.flush_now)


class _NamedWriteLogger(structlog.WriteLogger):
    """structlog's WriteLogger plus the name passed to ``get_logger`` (shown as ``logger``)."""

    def __init__(self, name: str | None) -> None:
        super().__init__(_SINK)  # type: ignore[arg-type]
        self.name = name

    def _at_once(self, message: str) -> None:
        """Warnings and errors are not held for the end of the loop turn."""
        self.msg(message)
        _SINK.flush_now()

    warn = warning = err = error = critical = exception = failure = fatal = _at_once


class _SinkHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Standard-library records into the sink; warnings and errors are not held either."""

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        if record.levelno >= logging.WARNING:
            _SINK.flush_now()


def _logger_factory(*args: object) -> _NamedWriteLogger:
    return _NamedWriteLogger(str(args[0]) if args else None)


def _add_logger_name(logger: WrappedLogger, _: str, event_dict: EventDict) -> EventDict:
    name = getattr(logger, "name", None)
    if name:
        event_dict.setdefault("logger", name)
    return event_dict


def _drop_below_level(_: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    # structlog's own filtering bound loggers bake the level in when first used; reading it here
    # keeps reconfiguration effective for cached loggers.
    if _LEVELS.get(method_name, logging.INFO) < _settings.level:
        raise structlog.DropEvent
    return event_dict


def _add_service(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    event_dict.setdefault("service", _settings.service)
    return event_dict


def _merge_request_scope(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    # request_id, method... of the request being served (ninetynine.common.context.request_scope).
    scope = current_scope()
    if scope is not None:
        for key, value in scope.log_context.items():
            event_dict.setdefault(key, value)
    return event_dict


class _UtcClock:
    """ISO-8601 UTC timestamps like ``datetime.now(utc).isoformat()`` with ``Z``, the date part cached."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def now(self) -> str:
        second, nanos = divmod(time.time_ns(), 1_000_000_000)
        if second != self._second:
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        micros = nanos // 1000
        # isoformat() leaves the fraction out when it is zero.
        return f"{self._prefix}.{micros:06d}Z" if micros else f"{self._prefix}Z"


_clock = _UtcClock()


def _add_timestamp(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    event_dict["timestamp"] = _clock.now()
    return event_dict


_dict_tracebacks = structlog.processors.ExceptionRenderer(
    # No local variables: they may hold tokens or player data.
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
)


def _json_default(obj: object) -> str:
    return str(obj)


# Dataclasses and datetimes stay str()-ed as with the json module; UTF-8 (Korean refusal texts)
# is written as is.
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def _dumps(event_dict: EventDict) -> str:
    try:
        return orjson.dumps(event_dict, default=_json_default, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:  # integers beyond 64 bits, circular data...: the slow, lenient way
        return json.dumps(event_dict, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _render(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> str:
    if _settings.json:
        return _dumps(_dict_tracebacks(logger, method_name, event_dict))
    return _settings.console(logger, method_name, event_dict)


# Shared by structlog's own loggers and by stdlib records (as the formatter's pre-chain).
_PRE_CHAIN: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    _merge_request_scope,
    structlog.processors.add_log_level,
    _add_timestamp,
    _add_service,
    structlog.processors.StackInfoRenderer(),
]


class _ClientFaults(logging.Filter):
    """aiohttp logs a request it cannot parse (``LineTooLong``, ``BadStatusLine``, headers too large:
    the client's fault) with ``logger.exception``; here that becomes one warning line naming the
    fault, without the stack. Exceptions of the server's own handlers stay errors with their stack."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and _is_client_fault(exc):
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {str(exc)[:200]}"
            record.args = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


def _is_client_fault(exc: BaseException) -> bool:
    try:
        from aiohttp.http_exceptions import HttpProcessingError
    except ImportError:  # pragma: no cover - aiohttp is a dependency of the gateway only
        return False
    return isinstance(exc, HttpProcessingError)


_CLIENT_FAULTS = _ClientFaults()
# Where aiohttp's server logs the requests it refused to parse.
_CLIENT_FAULT_LOGGERS = ("aiohttp.server",)


def configure_logging(
    service: str,
    *,
    level: str = "info",
    json_logs: bool | None = None,
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and stdlib logging for ``service``.

    ``level`` is a name (debug, info, warning, error, critical); an unknown name raises
    ``ValueError``. ``json_logs=None`` picks JSON unless the output stream is a terminal.
    ``stream`` defaults to ``sys.stderr`` (looked up on every write).
    """
    try:
        threshold = _LEVELS[level.lower()]
    except KeyError:
        raise ValueError(f"unknown log level {level!r}; use one of {', '.join(_LEVELS)}") from None
    _SINK.flush_now()  # what was logged so far goes to the stream it was logged for
    out = stream or sys.stderr
    is_tty = bool(getattr(out, "isatty", lambda: False)())
    _settings.service = service
    _settings.level = threshold
    _settings.json = (not is_tty) if json_logs is None else json_logs
    _settings.stream = stream
    _settings.console = structlog.dev.ConsoleRenderer(colors=is_tty)

    structlog.configure(
        processors=[_drop_below_level, _add_logger_name, *_PRE_CHAIN, _render],
        wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET),
        logger_factory=_logger_factory,
        cache_logger_on_first_use=True,
    )

    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *_PRE_CHAIN],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, _render],
    )
    handler = _SinkHandler(_SINK)  # type: ignore[arg-type]
    handler.setFormatter(formatter)
    root = logging.getLogger()
    if _settings.handler is not None:
        root.removeHandler(_settings.handler)
    root.addHandler(handler)
    root.setLevel(threshold)
    _settings.handler = handler
    for name in _CLIENT_FAULT_LOGGERS:
        logging.getLogger(name).addFilter(_CLIENT_FAULTS)  # a no-op when already there


def get_logger(name: str | None = None) -> Logger:
    """A structlog logger; ``name`` (usually ``__name__``) appears as the ``logger`` field.

    Safe to call at import time: the logger resolves the configuration on first use.
    """
    if name is None:
        return structlog.get_logger()  # type: ignore[no-any-return]
    return structlog.get_logger(name)  # type: ignore[no-any-return]


def emit_line(logger_name: str, level: str, event: str, fields: dict[str, object]) -> None:
    """Write ``get_logger(logger_name).<level>(event, **fields)``, skipping the processor chain.

    Same filtering, keys, key order and format as the structlog path (the fields first, then
    ``event``, ``logger``, the bound context, ``level``, ``timestamp``, ``service``), at a
    fraction of its cost. ``level`` is a level name (``info``, ``error``...). Fields that need a
    processor (``exc_info``, ``stack_info``) and console output take the structlog path.
    """
    threshold = _LEVELS[level]
    if threshold < _settings.level:
        return
    if not _settings.json or "exc_info" in fields or "stack_info" in fields:
        getattr(get_logger(logger_name), level)(event, **fields)
        return
    event_dict: EventDict = dict(fields)
    event_dict["event"] = event
    event_dict.setdefault("logger", logger_name)
    structlog.contextvars.merge_contextvars(None, level, event_dict)
    _merge_request_scope(None, level, event_dict)
    event_dict["level"] = level
    event_dict["timestamp"] = _clock.now()
    event_dict.setdefault("service", _settings.service)
    _SINK.write(_dumps(event_dict) + "\n")
    if threshold >= logging.WARNING:
        _SINK.flush_now()
    else:
        _SINK.flush()
