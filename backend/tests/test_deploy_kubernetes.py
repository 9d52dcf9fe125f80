"""The Kubernetes manifests (``deploy/kubernetes/``, design 0071), checked by a real validator:
``kubernetes-validate`` (the dev extra), strict, against the Kubernetes API schemas its wheel
bundles (offline), for :data:`K8S_VERSION`. A broken copy (a misspelt field, a wrong type, a
missing required field, a field where its object has none) is rejected, so the check is not
vacuous. Beyond the schemas: the selectors meet their pods, Redis is reachable from the web and
pool pods only, the pool pods have what bubblewrap needs and no more, and the commands and
environment mirror docker-compose.queue.yml (its file, read as YAML) and parse as the CLI parses
them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from jaxscope.bus.host import parse_lanes
from jaxscope.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "deploy" / "kubernetes"
COMPOSE = ROOT / "docker-compose.queue.yml"
# The oldest Kubernetes with everything the pool pods ask for on by default: user namespaces for
# pods (``hostUsers: false``) and ``procMount`` beta and enabled since 1.33.
K8S_VERSION = "1.33.0"
Doc = dict[str, Any]


def manifests() -> list[Doc]:
    docs = []
    for path in sorted(FOLDER.glob("*.yaml")):
        docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def by(kind: str, name: str) -> Doc:
    return next(d for d in manifests() if d["kind"] == kind and d["metadata"]["name"] == name)


def container(workload: Doc) -> Doc:
    (only,) = workload["spec"]["template"]["spec"]["containers"]
    result: Doc = only
    return result


def env(workload: Doc) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(workload)["env"]}


def test_every_manifest_is_valid_for_its_api() -> None:
    docs = manifests()
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    assert kinds == [
        ("Deployment", "pool"),
        ("Deployment", "web"),
        ("NetworkPolicy", "pool"),
        ("NetworkPolicy", "redis"),
        ("Service", "redis"),
        ("Service", "web"),
        ("StatefulSet", "redis"),
    ]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


@pytest.mark.parametrize(
    "breakage",
    ["misspelt field", "wrong type", "missing required field", "field at the wrong level"],
)
def test_the_validator_rejects_a_broken_copy(breakage: str) -> None:
    pool = copy.deepcopy(by("Deployment", "pool"))
    if breakage == "misspelt field":
        container(pool)["securityContex"] = container(pool).pop("securityContext")
    elif breakage == "wrong type":
        pool["spec"]["replicas"] = "two"
    elif breakage == "missing required field":
        del container(pool)["name"]
    else:  # procMount is a container's setting, not the pod's
        pool["spec"]["template"]["spec"]["securityContext"]["procMount"] = "Unmasked"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pool, K8S_VERSION, strict=True)


def test_selectors_meet_their_pods_and_redis_is_private() -> None:
    docs = manifests()
    pods = {
        d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"]
        for d in docs
        if d["kind"] in ("Deployment", "StatefulSet")
    }

    def matching(selector: dict[str, str]) -> set[str]:
        return {name for name, labels in pods.items() if selector.items() <= labels.items()}

    for d in docs:
        if d["kind"] in ("Deployment", "StatefulSet"):
            assert matching(d["spec"]["selector"]["matchLabels"]) == {d["metadata"]["name"]}
        if d["kind"] == "Service":
            assert matching(d["spec"]["selector"]) == {d["metadata"]["name"]}
    assert by("Deployment", "web")["spec"]["replicas"] == 2
    # Redis: in from the web and pool pods only, on its port; out to nobody.
    policy = by("NetworkPolicy", "redis")["spec"]
    assert matching(policy["podSelector"]["matchLabels"]) == {"redis"}
    (rule,) = policy["ingress"]
    sources = set().union(*(matching(p["podSelector"]["matchLabels"]) for p in rule["from"]))
    assert sources == {"web", "pool"}
    assert all(set(p) == {"podSelector"} for p in rule["from"])  # no namespace or address
    assert rule["ports"] == [{"protocol": "TCP", "port": 6379}]
    assert policy["policyTypes"] == ["Ingress", "Egress"] and policy["egress"] == []
    # The pool pods: nobody in, out to Redis and the DNS only.
    pool_policy = by("NetworkPolicy", "pool")["spec"]
    assert matching(pool_policy["podSelector"]["matchLabels"]) == {"pool"}
    assert pool_policy["ingress"] == [] and len(pool_policy["egress"]) == 2
    assert matching(pool_policy["egress"][0]["to"][0]["podSelector"]["matchLabels"]) == {"redis"}
    assert {p["port"] for p in pool_policy["egress"][1]["ports"]} == {53}


def test_the_pool_pods_have_what_bubblewrap_needs_and_no_more() -> None:
    pool = by("Deployment", "pool")
    spec = pool["spec"]["template"]["spec"]
    assert spec["hostUsers"] is False
    assert spec["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    assert spec["securityContext"]["appArmorProfile"] == {"type": "Unconfined"}
    assert spec["securityContext"]["runAsNonRoot"] is True
    context = container(pool)["securityContext"]
    assert context == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "procMount": "Unmasked",
        "capabilities": {"drop": ["ALL"]},
    }
    assert "privileged" not in str(pool) and "SYS_ADMIN" not in str(pool)
    # Everyone else keeps the runtime's default profiles and drops every capability.
    for kind, name in (("Deployment", "web"), ("StatefulSet", "redis")):
        workload = by(kind, name)
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert "hostUsers" not in pod and "appArmorProfile" not in pod["securityContext"]
        assert container(workload)["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_the_commands_and_environment_mirror_the_compose_recipe() -> None:
    compose = yaml.safe_load(COMPOSE.read_text())["services"]
    for name in ("web", "pool"):
        workload = by("Deployment", name)
        assert container(workload)["command"] == compose[name]["command"]
        assert "args" not in container(workload)
        environment = env(workload)
        assert set(environment) == set(compose[name]["environment"])
        assert environment["JAXSCOPE_QUEUE"] == compose[name]["environment"]["JAXSCOPE_QUEUE"]
        # Secrets from the Secret, never in the file.
        secret = environment["JAXSCOPE_QUEUE_PASSWORD"]["secretKeyRef"]
        assert secret == {"name": "jaxscope", "key": "password"}
        uid = str(workload["spec"]["template"]["spec"]["securityContext"]["runAsUser"])
        assert compose[name]["user"] == f"{uid}:{uid}"
    assert env(by("Deployment", "web"))["JAXSCOPE_TOKEN"]["secretKeyRef"]["key"] == "token"
    redis = by("StatefulSet", "redis")
    assert container(redis)["image"] == compose["redis"]["image"]
    # Compose escapes $ as $$; the same shell command otherwise.
    assert container(redis)["command"] == [
        part.replace("$$", "$") for part in compose["redis"]["command"]
    ]
    web = build_parser().parse_args(container(by("Deployment", "web"))["command"][1:])
    pool = build_parser().parse_args(container(by("Deployment", "pool"))["command"][1:])
    assert web.command == "serve" and pool.command == "pool"
    assert set(parse_lanes(pool.lanes)) == {"light", "heavy", "torch"}
