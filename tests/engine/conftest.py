"""Fixtures for the engine service tests: one real server per test module."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from tests.engine.service_fixtures import RunningEngine, run_engine


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEngine]:
    yield from run_engine(tmp_path_factory.mktemp("engine"))


@pytest.fixture(scope="module")
def stub(engine: RunningEngine) -> Iterator[pb_grpc.EngineServiceStub]:
    channel = grpc.insecure_channel(engine.target)
    try:
        yield pb_grpc.EngineServiceStub(channel)
    finally:
        channel.close()
