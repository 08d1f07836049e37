"""A real Prometheus against a real stack: the metrics, their labels and the rules fit together.

Prometheus (Debian's ``prometheus`` package) runs with a config derived from
deploy/prometheus/prometheus.yml -- the same jobs, targets replaced by the ports ``ninety-nine
serve`` printed, 1 s scrape and rule intervals -- and the rule files of deploy/prometheus/rules/.
Games are played while it scrapes: one with a human playing through the gateway's WebSocket
against bots, one whose human never plays (every turn of that seat times out). Then the recorded
move-latency p99 must have a value for every hop and ``up`` must be 1 for every job.

Prometheus writes only under the test's temporary directory (``--storage.tsdb.path``, cwd).
Without the ``prometheus`` binary the test is skipped locally and fails under CI.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
import yaml

from ninetynine.launch import free_port
from tests.ops.stack import Serve, open_table

pytestmark = pytest.mark.timeout(180)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
HOPS = {"engine_apply", "session_durable", "session_fanout", "gateway_client"}
JOBS = {"engine", "session", "gateway"}
QUERY_TIMEOUT_S = 30.0
HISTOGRAMS_SCRAPED = (
    'count by (job) ({__name__=~"ninetynine_(engine_rpc|session_move|gateway_move)_duration_seconds_count"})'
)


def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("the prometheus binary is missing; CI installs Debian's prometheus package")
    pytest.skip("prometheus is not installed (apt-get install prometheus); CI runs this test")


def write_config(tmp: Path, metrics_urls: dict[str, str]) -> Path:
    """deploy/prometheus/prometheus.yml with this stack's targets and 1 s intervals."""
    config: dict[str, Any] = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    targets: dict[str, list[str]] = {}
    for name, url in metrics_urls.items():
        targets.setdefault(name.split("-")[0], []).append(urlsplit(url).netloc)
    jobs = {job["job_name"] for job in config["scrape_configs"]}
    assert jobs == JOBS == set(targets), (jobs, targets)
    for job in config["scrape_configs"]:
        job["static_configs"] = [{"targets": targets[job["job_name"]]}]

    rules_dir = tmp / "rules"
    rules_dir.mkdir()
    rule_files = sorted((DEPLOY / "rules").glob("*.yml"))
    assert [f.name for f in rule_files] == ["alerts.yml", "recording.yml"]
    for source in rule_files:
        rules = yaml.safe_load(source.read_text())
        for group in rules["groups"]:
            group["interval"] = "1s"
        (rules_dir / source.name).write_text(yaml.safe_dump(rules, sort_keys=False))
    config["rule_files"] = [str(rules_dir / "*.yml")]
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Serve]:
    serve = Serve.start("--bot-think-ms=10", "--turn-time-scale=0.01", "--log-level=warning", cwd=tmp_path)
    try:
        serve.wait_ready()
        yield serve
        assert serve.terminate() == 0, serve.output()
    finally:
        if serve.proc.poll() is None:
            serve.kill()


@pytest.fixture
def prometheus(tmp_path: Path, stack: Serve) -> Iterator[str]:
    binary = prometheus_binary()
    home = tmp_path / "prometheus"
    home.mkdir()
    config = write_config(home, stack.metrics_urls())
    port = free_port()
    log = (home / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={home / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        cwd=home,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
        assert (home / "tsdb").is_dir(), "Prometheus did not use the temporary storage path"


async def wait_ready(http: aiohttp.ClientSession, base: str) -> None:
    deadline = time.monotonic() + QUERY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            async with http.get(f"{base}/-/ready") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"Prometheus at {base} not ready within {QUERY_TIMEOUT_S} s")


async def query(http: aiohttp.ClientSession, base: str, promql: str) -> list[dict[str, Any]]:
    async with http.get(f"{base}/api/v1/query", params={"query": promql}) as response:
        body = await response.json()
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def by_label(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {series["metric"].get(label, ""): float(series["value"][1]) for series in result}


async def wait_for_values(
    http: aiohttp.ClientSession,
    base: str,
    promql: str,
    label: str,
    wanted: set[str],
    accept: Callable[[float], bool] = math.isfinite,
) -> dict[str, float]:
    """Query until ``wanted`` label values all have an ``accept``-ed value (the rules need two scrapes)."""
    deadline = time.monotonic() + QUERY_TIMEOUT_S
    values: dict[str, float] = {}
    while time.monotonic() < deadline:
        values = by_label(await query(http, base, promql), label)
        if wanted <= {key for key, value in values.items() if accept(value)}:
            return values
        await asyncio.sleep(0.5)
    raise AssertionError(f"{promql}: no value for {wanted - set(values)} (got {values})")


async def play_games(web_url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two games at once: one with a human playing, one with a human who lets every turn time out."""
    async with aiohttp.ClientSession() as http:
        player = await open_table(http, web_url)
        idler = await open_table(http, web_url)
        await player.create_room_with_bots(2)
        await idler.create_room_with_bots(2)
        finals = await asyncio.wait_for(
            asyncio.gather(player.finish_game(play=True), idler.finish_game(play=False)), 60
        )
        await player.ws.close()
        await idler.ws.close()
    return finals[0], finals[1]


async def test_recorded_move_latency_through_a_real_prometheus(stack: Serve, prometheus: str) -> None:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        await wait_ready(http, prometheus)
        await wait_for_values(http, prometheus, "up", "job", JOBS)

        # Labelled histograms appear with their first observation, and rate() needs an increase
        # between two scrapes: so a first round creates the series, Prometheus scrapes them, and a
        # second round increases them (in production the series exist long before).
        first = await play_games(stack.web_url)
        await wait_for_values(http, prometheus, HISTOGRAMS_SCRAPED, "job", JOBS)
        second = await play_games(stack.web_url)
        assert {view["phase"] for view in (*first, *second)} == {"finished"}

        up = await wait_for_values(http, prometheus, "up", "job", JOBS)
        assert up == {job: 1.0 for job in JOBS}, up
        p99 = await wait_for_values(http, prometheus, "ninetynine:move_latency_seconds:p99_5m", "hop", HOPS)
        p50 = await wait_for_values(http, prometheus, "ninetynine:move_latency_seconds:p50_5m", "hop", HOPS)
        # A counter's rate is 0, not absent, until a scrape after the second round's timeouts: a
        # short round may end between two scrapes, so wait for the increase to be scraped.
        timeouts = await wait_for_values(
            http,
            prometheus,
            "ninetynine:session_timeouts:per_minute",
            "mode",
            {"kr-product"},
            accept=lambda value: value > 0,
        )
        lateness = await wait_for_values(
            http, prometheus, "ninetynine:session_deadline_lateness_seconds:p99_5m", "", {""}
        )

    for hop in HOPS:
        assert 0 < p50[hop] <= p99[hop] < 5.0, (hop, p50, p99)
    # The idle human's turns ran out: the timeouts recorded are real, not a zero series.
    assert timeouts["kr-product"] > 0
    assert lateness[""] >= 0

    print("\nPrometheus (1 s scrape, rules of deploy/prometheus/rules, rate over 5m):")
    print(f"  up: {up}")
    for hop in sorted(HOPS):
        print(f"  move latency {hop:<16} p50 {p50[hop] * 1000:8.2f} ms   p99 {p99[hop] * 1000:8.2f} ms")
    print(f"  timeouts per minute (kr-product): {timeouts['kr-product']:.1f}")
    print(f"  deadline lateness p99: {lateness[''] * 1000:.2f} ms")
