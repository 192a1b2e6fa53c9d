"""deploy/prometheus and deploy/grafana against the real thing: promtool checks and unit-tests the
rules, and Debian's Prometheus scrapes a running `pycm run` over HTTPS with a bearer token.

The manager leads (short election timings), reconciles a Deployment, and serves /metrics behind
delegated authentication and authorization: the emulator reviews the scraper's token and allows
it GET /metrics by the manifests' pycm:metrics-reader rule. Prometheus (127.0.0.1 only, a
temporary data directory, a free port, bounded waits) loads rules.yaml and scrapes with the
token (one job) and without it (another, which must be refused). The metric names rules.yaml and
pycm.json use are checked against the families a live /metrics declares.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from pycm.sharding.metrics import ShardingMetrics
from pycm.sim.auth import UserInfo
from pycm.sim.server import run_emulator
from tests.deploy.conftest import DEPLOY
from tests.deploy.rbac import emulator_policy
from tests.support.manager import free_port, poll, start_manager, stop_manager

RULES = DEPLOY / "prometheus" / "rules.yaml"
RULES_TEST = DEPLOY / "prometheus" / "rules_test.yaml"
DASHBOARD = DEPLOY / "grafana" / "pycm.json"
SCRAPER = "system:serviceaccount:monitoring:prometheus"
BOUND = 30.0  # seconds for any one wait on a process or a series
# Families the rules and the dashboard use are named with these prefixes (pycm's own, client-go's,
# controller-runtime's, the sharded member's and the process collector's).
METRIC = re.compile(
    r"\b((?:workqueue|controller_runtime|controller_sharding|rest_client|leader_election|pycm"
    r"|process)_[a-z0-9_]+)\b"
)
SHARDING = "controller_sharding_"  # served by sharded members only (pycm run --sharded)
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: make test installs prometheus (tests/system-deps.sh)")
    return path


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_prometheus_rules_pass_promtool_check_and_unit_tests() -> None:
    promtool = _tool("promtool")
    check = _run(promtool, "check", "rules", str(RULES))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS" in check.stdout
    tested = _run(promtool, "test", "rules", str(RULES_TEST))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_prometheus_rules_test_fires_every_alert_and_checks_the_p99_record() -> None:
    rules = yaml.safe_load(RULES.read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    records = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    assert len(alerts) >= 8
    tests = yaml.safe_load(RULES_TEST.read_text())["tests"]
    fired = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    quiet = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if not case.get("exp_alerts")
    }
    assert fired == alerts, f"alerts never shown firing: {sorted(alerts - fired)}"
    assert quiet == alerts, f"alerts never shown quiet: {sorted(alerts - quiet)}"
    exprs = {c["expr"] for t in tests for c in t.get("promql_expr_test", [])}
    assert "controller:controller_runtime_reconcile_time_seconds:p99_rate5m" in exprs
    assert "controller:controller_runtime_reconcile_time_seconds:p99_rate5m" in records


def _exported(metrics_text: str) -> set[str]:
    """The sample names each declared family can have (families with no samples yet count)."""
    names = set()
    for line in metrics_text.splitlines():
        if not line.startswith("# TYPE "):
            continue
        _, _, name, kind = line.split(maxsplit=3)
        if kind in ("histogram", "summary"):
            names |= {f"{name}_bucket", f"{name}_count", f"{name}_sum"}
        names.add(name)
    return names


def _sharding_exported() -> set[str]:
    registry = CollectorRegistry()
    ShardingMetrics(registry)
    return _exported(generate_latest(registry).decode())


def test_sharding_metrics_the_rules_and_dashboard_use_are_the_sharded_members() -> None:
    """A sharded member's families (a plain ``pycm run`` has none, so the live scrape below
    leaves them to this check)."""
    used = {m for m in _used_in_rules() | _used_in_dashboard() if m.startswith(SHARDING)}
    assert {
        "controller_sharding_lease_lost_total",
        "controller_sharding_drain_in_progress_seconds",
    } <= used
    assert not sorted(used - _sharding_exported())
    # The labels they group by are the ones a member serves (its series, once it has joined).
    registry = CollectorRegistry()
    metrics = ShardingMetrics(registry)
    metrics.watch_member("pycm", "pycm-0", 15.0, lambda: 0.0)
    metrics.watch_keys("pycm", "pycm-0", lambda: 0, lambda: 0)
    metrics.members.labels("pycm").set(3)
    metrics.share_ratio.labels("pycm", "pycm-0").set(0.3)
    metrics.drain_duration.labels("pycm").observe(0.1)
    served = _served_labels(generate_latest(registry).decode())
    rules = yaml.safe_load(RULES.read_text())
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [rule["expr"] for g in rules["groups"] for rule in g["rules"]]
    exprs += [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    sharding_exprs = [e for e in exprs if SHARDING in e]
    assert len(sharding_exprs) >= 8
    assert not [p for expr in sharding_exprs for p in _missing_labels(expr, served)]


def _used_in_rules() -> set[str]:
    rules = yaml.safe_load(RULES.read_text())
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    used = set()
    for group in rules["groups"]:
        for rule in group["rules"]:
            expr = rule["expr"]
            used |= set(METRIC.findall(expr)) | set(SELECTOR.findall(expr))
    return used - recorded


# An alert on a histogram quantile compared with a number: `histogram_quantile(q, ...x_bucket...)
# > N` (or >=). A quantile never reads past the top finite bucket (one in +Inf reads as it).
QUANTILE_THRESHOLD = re.compile(
    r"histogram_quantile\(.*?\b(\w+)_bucket\b.*\)\s*(>=|>)\s*([0-9.]+)\s*$", re.S
)


def _top_buckets(metrics_text: str) -> dict[str, float]:
    """Each histogram's largest finite ``le`` in a /metrics text."""
    top: dict[str, float] = {}
    for name, le in re.findall(r'^(\w+)_bucket\{[^}]*\ble="([^"]+)"', metrics_text, re.M):
        if le != "+Inf":
            top[name] = max(top.get(name, 0.0), float(le))
    return top


def _unreachable_thresholds(rules: dict[str, Any], top: dict[str, float]) -> list[str]:
    """Alerts whose quantile threshold no value of the histogram pycm serves can pass."""
    found = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            match = QUANTILE_THRESHOLD.search(rule["expr"].strip())
            if "alert" not in rule or match is None:
                continue
            family, op, threshold = match.group(1), match.group(2), float(match.group(3))
            assert family in top, f"{rule['alert']}: no {family} buckets served"
            if threshold > top[family] or (op == ">" and threshold == top[family]):
                found.append(f"{rule['alert']}: {family} {op} {threshold:g}, top {top[family]:g}")
    return found


AGGREGATION = re.compile(r"\bby\s*\(([^)]*)\)\s*\(")
TARGET_LABELS = {"job", "instance"}  # Prometheus's, not pycm's


def _served_labels(metrics_text: str) -> dict[str, set[str]]:
    """Each sample name's label names in a /metrics text (names with no sample are absent)."""
    served: dict[str, set[str]] = {}
    for line in metrics_text.splitlines():
        match = re.match(r"([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s", line)
        if match and not line.startswith("#"):
            labels = set(re.findall(r'(\w+)="', match.group(2) or ""))
            served.setdefault(match.group(1), set()).update(labels)
    return served


def _missing_labels(expr: str, served: dict[str, set[str]]) -> list[str]:
    """Labels an aggregation groups ``by`` that a metric inside it does not carry (a panel or
    rule that would fold every series into one, or show an empty legend)."""
    problems = []
    for match in AGGREGATION.finditer(expr):
        depth, end = 1, match.end()
        while depth and end < len(expr):
            depth += {"(": 1, ")": -1}.get(expr[end], 0)
            end += 1
        inner = expr[match.end() : end]
        wanted = {label.strip() for label in match.group(1).split(",") if label.strip()}
        for metric in set(METRIC.findall(inner)) | set(SELECTOR.findall(inner)):
            if metric in served:
                implicit = {"le"} if metric.endswith("_bucket") else set()
                lacking = wanted - TARGET_LABELS - implicit - served[metric]
                if lacking:
                    problems.append(f"{metric} has no {', '.join(sorted(lacking))}")
    return problems


def _used_in_dashboard() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    used = set()
    for expr in exprs:
        used |= set(METRIC.findall(expr)) | set(SELECTOR.findall(expr))
    return used


def test_dashboard_has_the_six_rows_and_every_panel_queries() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
    assert rows == [
        "Leader election and lease",
        "Controllers",
        "Work queues",
        "REST client",
        "Process",
        "Sharding",
    ]
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel["title"]
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


def _prometheus_config(tmp: Path, target: str, token_file: Path) -> Path:
    def job(name: str, authorization: dict[str, str] | None) -> dict[str, Any]:
        config: dict[str, Any] = {
            "job_name": name,
            "scheme": "https",
            "tls_config": {"insecure_skip_verify": True},  # pycm's self-signed serving cert
            "static_configs": [{"targets": [target]}],
        }
        if authorization:
            config["authorization"] = authorization
        return config

    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [
            job("pycm", {"type": "Bearer", "credentials_file": str(token_file)}),
            job("pycm-no-token", None),
        ],
    }
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def prometheus_port() -> int:
    return free_port()


def _start_prometheus(tmp: Path, config: Path, port: int) -> subprocess.Popen[bytes]:
    with (tmp / "prometheus.log").open("wb") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            [
                _tool("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=1h",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def stopped() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            _stop(proc)


@pytest.mark.asyncio
async def test_prometheus_scrapes_pycm_over_https_with_a_bearer_token(
    tmp_path: Path, prometheus_port: int, stopped: list[subprocess.Popen[bytes]]
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(emulator_policy("nobody", SCRAPER)))
    async with run_emulator(
        tls=False, kubelet=True, pod_ready_delay=0.0, nodes=1, authz_policy_file=str(policy)
    ) as emu:
        token = "prometheus-token"
        emu.authenticator.add(token, UserInfo(SCRAPER, "uid-prom", ()))
        token_file = tmp_path / "token"
        token_file.write_text(token)
        manager = start_manager(
            emu.kubeconfig_path,
            tmp_path,
            "--leader-elect=true",
            "--leader-elect-lease-duration=4s",
            "--leader-elect-renew-deadline=3s",
            "--leader-elect-retry-period=500ms",
            # An OTLP endpoint where nothing listens: the pycm_otel_* families PycmTracesLost
            # reads exist only with export on (and its spans are then lost, as that alert says).
            f"--otlp-endpoint=http://127.0.0.1:{free_port()}",
        )
        try:
            admin = {"Authorization": f"Bearer {emu.admin_token}"}
            async with httpx.AsyncClient(base_url=emu.url, headers=admin, timeout=10) as api:
                deployment = {
                    "metadata": {"name": "web"},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                        },
                    },
                }
                r = await api.post("/apis/apps/v1/namespaces/default/deployments", json=deployment)
                assert r.status_code == 201, r.text
            target = manager.url.removeprefix("https://")
            config = _prometheus_config(tmp_path, target, token_file)
            prometheus = _start_prometheus(tmp_path, config, prometheus_port)
            stopped.append(prometheus)
            base = f"http://127.0.0.1:{prometheus_port}"
            async with httpx.AsyncClient(base_url=base, timeout=5) as prom:

                async def ready() -> bool:
                    assert prometheus.poll() is None, (tmp_path / "prometheus.log").read_text()
                    try:
                        return (await prom.get("/-/ready")).status_code == 200
                    except httpx.TransportError:
                        return False

                await poll(ready, timeout=BOUND, interval=0.1)

                async def series(query: str) -> list[dict[str, Any]]:
                    r = await prom.get("/api/v1/query", params={"query": query})
                    assert r.status_code == 200, r.text
                    result: list[dict[str, Any]] = r.json()["data"]["result"]
                    return result

                async def reconciled() -> list[dict[str, Any]]:
                    return await series(
                        'controller_runtime_reconcile_total{job="pycm",controller="deployment"}'
                    )

                found = await poll(reconciled, timeout=BOUND, interval=0.2)
                assert float(found[0]["value"][1]) >= 1
                leader = await poll(
                    lambda: series('leader_election_master_status{job="pycm",name="pycm"}'),
                    timeout=BOUND,
                )
                assert leader[0]["value"][1] == "1"
                for query in (
                    'workqueue_depth{job="pycm",name="deployment"}',
                    'pycm_informer_synced{job="pycm",resource="pods"}',
                    'process_resident_memory_bytes{job="pycm"}',
                    'rest_client_requests_total{job="pycm"}',
                    'pycm_leader_election_renew_round_seconds_count{job="pycm"}',
                ):
                    assert await poll(lambda q=query: series(q), timeout=BOUND), query

                async def no_token_refused() -> list[dict[str, Any]]:
                    # (A scrape made before pycm listened failed otherwise, "connection
                    # refused": the target is down for that until its next scrape.)
                    r = await prom.get("/api/v1/targets")
                    return [
                        t
                        for t in r.json()["data"]["activeTargets"]
                        if t["labels"]["job"] == "pycm-no-token"
                        and t["health"] == "down"
                        and "connection refused" not in t["lastError"]
                    ]

                # Without a token the request is anonymous, and system:anonymous may not read
                # /metrics (KCM answers the same).
                (refused,) = await poll(no_token_refused, timeout=BOUND)
                assert "403" in refused["lastError"]
                assert (await series('up{job="pycm"}'))[0]["value"][1] == "1"
                # The rules load on a real server, as written.
                r = await prom.get("/api/v1/rules")
                loaded = {rule["name"] for g in r.json()["data"]["groups"] for rule in g["rules"]}
                alerts = {
                    rule["alert"]
                    for g in yaml.safe_load(RULES.read_text())["groups"]
                    for rule in g["rules"]
                    if "alert" in rule
                }
                assert alerts <= loaded

            # Every metric name the rules and the dashboard use is one pycm declares.
            async with httpx.AsyncClient(verify=False, timeout=10) as http:
                auth = {"Authorization": f"Bearer {token}"}
                r = await http.get(f"{manager.url}/metrics", headers=auth)
                assert r.status_code == 200, r.text
            exported = _exported(r.text)
            # Every quantile alert can fire with the buckets pycm's histograms really have.
            rules = yaml.safe_load(RULES.read_text())
            assert not _unreachable_thresholds(rules, _top_buckets(r.text))
            served = _served_labels(r.text)
            dashboard = json.loads(DASHBOARD.read_text())
            exprs = [rule["expr"] for g in rules["groups"] for rule in g["rules"]]
            exprs += [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
            assert not [p for expr in exprs for p in _missing_labels(expr, served)]
            for source, used in (
                ("rules.yaml", _used_in_rules()),
                ("pycm.json", _used_in_dashboard()),
            ):
                assert used, source
                unknown = sorted(m for m in used - exported if not m.startswith(SHARDING))
                assert not unknown, f"{source} uses metrics pycm does not export: {unknown}"
        finally:
            for proc in stopped:
                _stop(proc)
            code = await stop_manager(manager)
        assert code == 0, manager.log.read_text()[-3000:]


def _sampled(metrics_text: str) -> set[str]:
    """The sample names with at least one sample in a /metrics text."""
    return {
        line.split("{")[0].split(" ")[0]
        for line in metrics_text.splitlines()
        if line and not line.startswith("#")
    }


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_dashboard_instance_variable_lists_a_manager_without_leader_election(
    tmp_path: Path,
) -> None:
    # The dashboard's Instance variable feeds every panel's instance=~"$instance": its metric
    # must be served by any replica, also one run with --leader-elect=false (no lease metrics).
    variables = json.loads(DASHBOARD.read_text())["templating"]["list"]
    (instance,) = [v for v in variables if v["name"] == "instance"]
    query = re.fullmatch(r"label_values\((\w+)\{.*\}, instance\)", instance["definition"])
    assert query, instance["definition"]
    async with run_emulator(tls=False, kubelet=False) as emu:
        manager = start_manager(emu.kubeconfig_path, tmp_path)  # --leader-elect=false
        try:
            auth = {"Authorization": f"Bearer {emu.admin_token}"}
            async with httpx.AsyncClient(verify=False, timeout=5, headers=auth) as http:

                async def scraped() -> str | None:
                    assert manager.proc.poll() is None, manager.log.read_text()
                    try:
                        r = await http.get(f"{manager.url}/metrics")
                    except httpx.TransportError:
                        return None
                    return r.text if r.status_code == 200 else None

                text = await poll(scraped, timeout=BOUND)
        finally:
            code = await stop_manager(manager)
        assert code == 0, manager.log.read_text()[-3000:]
    assert query.group(1) in _sampled(text), f"{query.group(1)} has no sample without election"


def test_unreachable_thresholds_catches_a_quantile_past_the_top_bucket() -> None:
    text = (
        'q_seconds_bucket{le="1.0",name="a"} 0.0\n'
        'q_seconds_bucket{le="10.0",name="a"} 0.0\n'
        'q_seconds_bucket{le="+Inf",name="a"} 3.0\n'
    )
    assert _top_buckets(text) == {"q_seconds": 10.0}

    def rules(expr: str) -> dict[str, Any]:
        return {"groups": [{"rules": [{"alert": "A", "expr": expr}]}]}

    quantile = "histogram_quantile(0.99, sum by (le) (rate(q_seconds_bucket[5m])))"
    assert _unreachable_thresholds(rules(f"{quantile} > 60"), {"q_seconds": 10.0}) == [
        "A: q_seconds > 60, top 10"
    ]
    assert _unreachable_thresholds(rules(f"{quantile} > 10"), {"q_seconds": 10.0}) == [
        "A: q_seconds > 10, top 10"
    ]
    assert _unreachable_thresholds(rules(f"{quantile} >= 10"), {"q_seconds": 10.0}) == []
    assert _unreachable_thresholds(rules(f"{quantile} > 5"), {"q_seconds": 10.0}) == []


def test_missing_labels_sees_a_grouping_label_the_metric_lacks() -> None:
    served = _served_labels(
        'rest_client_requests_total{code="200",method="GET"} 1.0\n'
        'workqueue_queue_duration_seconds_bucket{le="1.0",name="q"} 1.0\n'
    )
    assert served == {
        "rest_client_requests_total": {"code", "method"},
        "workqueue_queue_duration_seconds_bucket": {"le", "name"},
    }
    expr = (
        "sum by (job, code, verb) (rate(rest_client_requests_total[5m])) / histogram_quantile("
        "0.9, sum by (le, name) (rate(workqueue_queue_duration_seconds_bucket[5m])))"
    )
    assert _missing_labels(expr, served) == ["rest_client_requests_total has no verb"]


def test_used_metric_names_extraction_sees_selectors_and_bare_names() -> None:
    # The check above is only as good as its extraction: a made-up name is caught either way.
    expr = 'rate(made_up_total{job="pycm"}[5m]) + workqueue_made_up_seconds'
    assert set(METRIC.findall(expr)) | set(SELECTOR.findall(expr)) == {
        "made_up_total",
        "workqueue_made_up_seconds",
    }
    assert _exported("# TYPE a_seconds histogram\n# TYPE b_total counter\n") == {
        "a_seconds",
        "a_seconds_bucket",
        "a_seconds_count",
        "a_seconds_sum",
        "b_total",
    }
