"""Metrics helpers: a real /metrics endpoint on port 0 and histograms on private registries."""

from __future__ import annotations

import asyncio
import socket
import urllib.request

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from ninetynine.common.metrics import LATENCY_BUCKETS, histogram, rpc_histogram, start_metrics_server


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
    return body.decode()


async def test_metrics_endpoint_serves_the_given_registry_on_a_chosen_port() -> None:
    registry = CollectorRegistry()
    latency = rpc_histogram("probe", registry=registry)
    latency.labels("/ninetynine.test.v1.Probe/Unary", "OK").observe(0.0003)
    port = start_metrics_server(0, "127.0.0.1", registry=registry)
    assert port > 0
    text = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/metrics")
    assert "# TYPE ninetynine_probe_rpc_duration_seconds histogram" in text
    buckets = {
        sample.labels["le"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "ninetynine_probe_rpc_duration_seconds_bucket"
        and sample.labels["method"] == "/ninetynine.test.v1.Probe/Unary"
        and sample.labels["code"] == "OK"
    }
    assert (buckets["0.00025"], buckets["0.0005"], buckets["+Inf"]) == (0.0, 1.0, 1.0)


def test_metrics_port_in_use_raises() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError):
            start_metrics_server(taken.getsockname()[1], "127.0.0.1", registry=CollectorRegistry())


def test_latency_buckets_cover_sub_millisecond_to_seconds() -> None:
    assert list(LATENCY_BUCKETS) == sorted(set(LATENCY_BUCKETS))
    assert LATENCY_BUCKETS[0] <= 0.0001 and LATENCY_BUCKETS[-1] >= 5.0
    # Enough resolution below 1 ms to tell a 0.2 ms Apply from a 0.8 ms one.
    assert len([b for b in LATENCY_BUCKETS if b < 0.001]) >= 3


def test_histogram_helper_uses_the_given_registry_and_buckets() -> None:
    registry = CollectorRegistry()
    h = histogram("ninetynine_probe_work_seconds", "Work.", ("mode",), registry=registry)
    h.labels("classic").observe(0.2)
    assert (
        registry.get_sample_value("ninetynine_probe_work_seconds_bucket", {"mode": "classic", "le": "0.25"})
        == 1
    )
    assert (
        registry.get_sample_value("ninetynine_probe_work_seconds_bucket", {"mode": "classic", "le": "0.1"})
        == 0
    )
    # The same name on another registry does not collide.
    histogram("ninetynine_probe_work_seconds", "Work.", ("mode",), registry=CollectorRegistry())
