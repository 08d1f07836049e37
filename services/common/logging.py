"""structlog set-up shared by every service: one call at start-up, one format everywhere.

``configure_logging("engine")`` makes every line carry an ISO-8601 UTC timestamp, the level, the
``service`` name and whatever is bound in structlog's contextvars (``request_id``, ``method``...).
Lines are JSON (one object per line) when stderr is not a terminal -- containers, CI, files -- and
human-readable console output on a terminal. Records from the standard library's ``logging``
(grpc, aiohttp, asyncio) go through the same processors and renderer, so one stream has one format.

The function is idempotent and may be called again (tests do) to change the level, the format or
the stream: the processors consult the current settings on every line, so loggers created or cached
before the call follow the new settings too.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import TextIO

import structlog
from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

__all__ = ["Logger", "configure_logging", "get_logger"]

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
    """A file-like object that writes to the currently configured stream."""

    def write(self, text: str) -> int:
        return (_settings.stream or sys.stderr).write(text)

    def flush(self) -> None:
        (_settings.stream or sys.stderr).flush()


_SINK = _Sink()


class _NamedWriteLogger(structlog.WriteLogger):
    """structlog's WriteLogger plus the name passed to ``get_logger`` (shown as ``logger``)."""

    def __init__(self, name: str | None) -> None:
        super().__init__(_SINK)  # type: ignore[arg-type]
        self.name = name


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


_dict_tracebacks = structlog.processors.ExceptionRenderer(
    # No local variables: they may hold tokens or player data.
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
)


def _json_default(obj: object) -> str:
    return str(obj)


# ensure_ascii=False keeps the Korean refusal texts readable in the JSON lines.
_json_renderer = structlog.processors.JSONRenderer(ensure_ascii=False, default=_json_default)


def _render(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> str:
    if _settings.json:
        rendered = _json_renderer(logger, method_name, _dict_tracebacks(logger, method_name, event_dict))
        return str(rendered)
    return _settings.console(logger, method_name, event_dict)


# Shared by structlog's own loggers and by stdlib records (as the formatter's pre-chain).
_PRE_CHAIN: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    _add_service,
    structlog.processors.StackInfoRenderer(),
]


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
    handler = logging.StreamHandler(_SINK)  # type: ignore[arg-type]
    handler.setFormatter(formatter)
    root = logging.getLogger()
    if _settings.handler is not None:
        root.removeHandler(_settings.handler)
    root.addHandler(handler)
    root.setLevel(threshold)
    _settings.handler = handler


def get_logger(name: str | None = None) -> Logger:
    """A structlog logger; ``name`` (usually ``__name__``) appears as the ``logger`` field.

    Safe to call at import time: the logger resolves the configuration on first use.
    """
    if name is None:
        return structlog.get_logger()  # type: ignore[no-any-return]
    return structlog.get_logger(name)  # type: ignore[no-any-return]
