"""The per-address budgets on an injected clock: refusals, refills, bounded memory, who the client is."""

from __future__ import annotations

import pytest

from ninetynine.gateway.admission import (
    Admission,
    Budgets,
    KeyedBuckets,
    client_address,
    parse_networks,
    peer_of_grpc,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_concurrent_connections_are_capped_per_address_and_freed_on_disconnect() -> None:
    admission = Admission(Budgets(max_connections_per_address=2), Clock())
    assert admission.connect("10.0.0.1") is None and admission.connect("10.0.0.1") is None
    refusal = admission.connect("10.0.0.1")
    assert refusal is not None and refusal.reason == "TOO_MANY_CONNECTIONS" and refusal.limit == "2"
    assert admission.connect("10.0.0.2") is None
    admission.disconnect("10.0.0.1")
    assert admission.connect("10.0.0.1") is None
    for _ in range(3):
        admission.disconnect("10.0.0.1")
    assert admission.open_connections("10.0.0.1") == 0


def test_budgets_refill_with_time() -> None:
    clock = Clock()
    admission = Admission(Budgets(rooms_per_minute_per_address=2), clock)
    assert admission.create_room("10.0.0.1") is None and admission.create_room("10.0.0.1") is None
    refusal = admission.create_room("10.0.0.1")
    assert refusal is not None and refusal.reason == "TOO_MANY_ROOMS"
    assert refusal.metadata == {"retryAfterMs": "30000", "limit": "2/min"}
    clock.now += 30
    assert admission.create_room("10.0.0.1") is None


def test_only_failed_tokens_spend_the_authentication_budget() -> None:
    clock = Clock()
    admission = Admission(Budgets(auth_failures_per_minute_per_address=2), clock)
    for _ in range(10):  # trying is free; failing costs
        assert admission.may_authenticate("10.0.0.1", "ROOM01") is None
    admission.authentication_failed("10.0.0.1", "ROOM01")
    admission.authentication_failed("10.0.0.1", None)
    refusal = admission.may_authenticate("10.0.0.1", "ROOM02")
    assert refusal is not None and refusal.reason == "TOO_MANY_AUTH_FAILURES"
    assert admission.may_authenticate("10.0.0.2", "ROOM01") is None


def test_ipv6_addresses_share_a_budget_per_64() -> None:
    admission = Admission(Budgets(max_connections_per_address=1), Clock())
    assert admission.connect("2001:db8:1:2::1") is None
    assert admission.connect("2001:db8:1:2:ffff::9") is not None  # same /64: same host
    assert admission.connect("2001:db8:1:3::1") is None
    assert admission.connect("::ffff:10.0.0.1") is None
    assert admission.connect("10.0.0.1") is not None  # the mapped IPv4 address is that address


def test_the_memory_of_keys_is_bounded() -> None:
    buckets = KeyedBuckets(rate=1.0, burst=1, max_keys=100)
    for i in range(10_000):
        buckets.take(f"10.0.{i // 256}.{i % 256}", 0.0)
    assert len(buckets) == 100
    assert buckets.take("10.0.39.15", 0.0) > 0  # among the most recent: still remembered


def test_x_forwarded_for_is_believed_only_from_trusted_proxies() -> None:
    proxies = parse_networks("10.0.0.0/8, 192.168.1.7")
    assert client_address("203.0.113.9", ["198.51.100.1"], proxies) == "203.0.113.9"
    assert client_address("10.1.2.3", ["198.51.100.1"], proxies) == "198.51.100.1"
    # A client-written left part, then the ingress (trusted), then the edge proxy that connected.
    chain = ["6.6.6.6, 198.51.100.1", "10.9.9.9"]
    assert client_address("192.168.1.7", chain, proxies) == "198.51.100.1"
    assert client_address("10.1.2.3", [], proxies) == "10.1.2.3"
    assert client_address("10.1.2.3", ["not-an-ip"], proxies) == "10.1.2.3"
    assert client_address("10.1.2.3", ["198.51.100.1"], ()) == "10.1.2.3"
    with pytest.raises(ValueError):
        parse_networks("10.0.0.0/33")


def test_the_address_in_a_grpc_peer() -> None:
    assert peer_of_grpc("ipv4:127.0.0.1:51234") == "127.0.0.1"
    assert peer_of_grpc("ipv6:[::1]:51234") == "::1"
    assert peer_of_grpc("ipv6:[fe80::1%eth0]:5") == "fe80::1"
    assert peer_of_grpc("unix:/tmp/sock") == "unix:/tmp/sock"
