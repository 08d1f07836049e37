"""12-factor flags: command line > NINETYNINE_<FLAG> > default, and --help names the variable."""

from __future__ import annotations

import argparse

import pytest

from ninetynine.common.config import add_env_argument, env_default, env_flag, env_var


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="probe")
    add_env_argument(parser, "--port", type=int, default=50051, help="gRPC port")
    add_env_argument(parser, "--metrics-port", type=int, default=9101, help="Prometheus port")
    add_env_argument(parser, "--log-level", default="info", choices=["debug", "info"])
    add_env_argument(parser, "--json-logs", action="store_true", help="force JSON logs")
    return parser


def test_env_var_names() -> None:
    assert env_var("--metrics-port") == "NINETYNINE_METRICS_PORT"
    assert env_var("metrics_port") == "NINETYNINE_METRICS_PORT"


def test_defaults_apply_without_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PORT", "METRICS_PORT", "LOG_LEVEL", "JSON_LOGS"):
        monkeypatch.delenv(f"NINETYNINE_{name}", raising=False)
    args = build_parser().parse_args([])
    assert (args.port, args.metrics_port, args.log_level, args.json_logs) == (50051, 9101, "info", False)


def test_environment_overrides_default_and_command_line_overrides_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NINETYNINE_PORT", "6000")
    monkeypatch.setenv("NINETYNINE_METRICS_PORT", "0")
    monkeypatch.setenv("NINETYNINE_JSON_LOGS", "true")
    args = build_parser().parse_args([])
    assert (args.port, args.metrics_port, args.json_logs) == (6000, 0, True)  # converted by type=int
    assert build_parser().parse_args(["--port", "7000"]).port == 7000


def test_bad_environment_value_is_a_clear_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NINETYNINE_PORT", "fifty")
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([])
    assert exited.value.code == 2
    assert "--port: invalid int value: 'fifty'" in capsys.readouterr().err


def test_bad_boolean_environment_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NINETYNINE_JSON_LOGS", "maybe")
    with pytest.raises(ValueError, match="NINETYNINE_JSON_LOGS='maybe' is not a boolean"):
        env_flag("json-logs")
    with pytest.raises(SystemExit, match="NINETYNINE_JSON_LOGS"):
        build_parser()


def test_help_shows_the_variable_and_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NINETYNINE_PORT", raising=False)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "gRPC port (env NINETYNINE_PORT; default: 50051)" in text
    assert "env NINETYNINE_LOG_LEVEL; default: info" in text


def test_env_default_returns_raw_string_or_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NINETYNINE_REDIS_URL", raising=False)
    assert env_default("redis-url", "redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    monkeypatch.setenv("NINETYNINE_REDIS_URL", "redis://cache:6379/1")
    assert env_default("redis-url", "redis://127.0.0.1:6379/0") == "redis://cache:6379/1"
