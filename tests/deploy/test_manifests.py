"""deploy/: the compose file and the Kubernetes manifests checked offline against their published JSON schemas
(the compose specification as vendored by check-jsonschema; Kubernetes' own schemas as shipped by
kubernetes-validate), then against each other and against what the API needs (probes, SSE, shared state)."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "k8s"
K8S_VERSION = "1.30.0"  # the oldest Kubernetes these manifests are meant for (autoscaling/v2, policy/v1)
#: vLLM's tool-call parser for each model family the compose file may serve
TOOL_PARSERS = {"Qwen/Qwen2.5": "hermes", "Qwen/Qwen3": "hermes", "deepseek-ai/DeepSeek-V3": "deepseek_v3",
                "meta-llama/Llama-3": "llama3_json"}


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def _k8s_docs() -> list[tuple[str, dict]]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    docs = []
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((K8S / name).read_text(encoding="utf-8")):
            if doc:
                docs.append((name, doc))
    return docs


def _by_kind(kind: str) -> list[dict]:
    return [doc for _, doc in _k8s_docs() if doc["kind"] == kind]


# ---- compose ---------------------------------------------------------------------------------------

def test_compose_matches_the_compose_specification():
    schema = json.loads(resources.files("check_jsonschema.builtin_schemas.vendor")
                        .joinpath("compose-spec.json").read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(_compose()), key=lambda e: list(e.path))
    assert [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors] == []


def test_the_schema_check_catches_a_typo():
    schema = json.loads(resources.files("check_jsonschema.builtin_schemas.vendor")
                        .joinpath("compose-spec.json").read_text(encoding="utf-8"))
    broken = _compose()
    broken["services"]["api"]["deploy"]["replica"] = 2
    assert not jsonschema.Draft202012Validator(schema).is_valid(broken)


def test_compose_has_the_scale_out_shape():
    services = _compose()["services"]
    assert {"api", "postgres", "chroma", "redis", "nginx", "kb-index", "llm"} <= set(services)
    api = services["api"]
    assert api["deploy"]["replicas"] == 2
    assert {"DATABASE_URL", "CHROMA_HOST", "REDIS_URL"} <= set(api["environment"])
    assert api["environment"]["DATABASE_URL"].startswith("postgresql://")
    assert api["depends_on"]["kb-index"]["condition"] == "service_completed_successfully"
    assert services["kb-index"]["command"] == ["gpu-advisor", "kb", "index"]
    assert services["chroma"]["command"][:2] == ["chroma", "run"]
    for name in ("postgres", "chroma", "redis"):
        assert services[name]["healthcheck"]["test"], name


def test_the_llm_profile_serves_a_model_with_its_tool_call_parser():
    llm = _compose()["services"]["llm"]
    assert llm["profiles"] == ["llm"]
    args = llm["command"]
    assert "--enable-auto-tool-choice" in args
    model = re.search(r":-([^}]+)\}", args[args.index("--model") + 1]).group(1)
    parser = args[args.index("--tool-call-parser") + 1]
    assert [p for prefix, p in TOOL_PARSERS.items() if model.startswith(prefix)] == [parser]


def test_nginx_streams_events_and_waits_longer_than_the_longest_answer():
    conf = (DEPLOY / "nginx.conf").read_text(encoding="utf-8")
    assert re.search(r"^\s*proxy_buffering off;", conf, re.M)
    read_timeout = int(re.search(r"^\s*proxy_read_timeout (\d+)s;", conf, re.M).group(1))
    from bot.settings import Settings

    defaults = Settings.model_fields
    longest = defaults["llm_timeout_s"].default * defaults["llm_max_steps"].default
    assert read_timeout > longest
    mounted = _compose()["services"]["nginx"]["volumes"][0].split(":")[0]
    assert (DEPLOY / mounted).resolve() == DEPLOY / "nginx.conf"


def test_the_proxies_let_slacks_larger_event_bodies_through_to_the_app():
    from bot.api.app import SLACK_BODY_BYTES

    slack = re.search(r"location = /slack/events \{(.*?)\}", (DEPLOY / "nginx.conf").read_text(encoding="utf-8"), re.S)
    assert slack and re.search(r"client_max_body_size 1m;", slack.group(1)) and "proxy_pass" in slack.group(1)
    ingress = next(i for i in _by_kind("Ingress") if i["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/slack/events")
    assert ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-body-size"] == "1m"
    assert SLACK_BODY_BYTES == 1024 * 1024


# ---- Kubernetes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,doc", _k8s_docs(), ids=lambda v: v if isinstance(v, str) else v["kind"])
def test_each_manifest_matches_the_kubernetes_schema(name, doc):
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_kubernetes_check_catches_a_typo():
    deployment = _by_kind("Deployment")[0]
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_kustomization_lists_every_manifest_once():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    assert set(kustomization) <= {"apiVersion", "kind", "namespace", "labels", "resources", "images"}
    assert kustomization["kind"] == "Kustomization"
    listed = kustomization["resources"]
    assert sorted(listed) == sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
    images = {doc_image for _, doc in _k8s_docs() for doc_image in _images(doc)}
    assert images == {"gpu-advisor"} and kustomization["images"][0]["name"] == "gpu-advisor"


def _images(doc: dict) -> list[str]:
    spec = doc.get("spec", {})
    pod = spec.get("template", {}).get("spec", {}) if "template" in spec else {}
    return [c["image"] for c in pod.get("containers", [])]


def test_the_api_deployment_probes_and_shares_state():
    deployment = _by_kind("Deployment")[0]
    pod = deployment["spec"]["template"]["spec"]
    api = pod["containers"][0]
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert api["resources"]["requests"]["cpu"] and api["resources"]["limits"]["memory"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert api["command"] == ["gpu-advisor", "serve", "--host", "0.0.0.0", "--port", "8000"]
    refs = {ref.get("configMapRef", ref.get("secretRef"))["name"] for ref in api["envFrom"]}
    assert refs == {_by_kind("ConfigMap")[0]["metadata"]["name"], _by_kind("Secret")[0]["metadata"]["name"]}
    settings = {**_by_kind("ConfigMap")[0]["data"], **_by_kind("Secret")[0]["stringData"]}
    assert {"DATABASE_URL", "REDIS_URL", "CHROMA_HOST"} <= set(settings)
    assert settings["CHROMA_HOST"] == _by_kind("StatefulSet")[0]["spec"]["serviceName"]


def test_service_hpa_pdb_and_ingress_point_at_the_api():
    deployment = _by_kind("Deployment")[0]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    services = {s["metadata"]["name"]: s for s in _by_kind("Service")}
    api_service = services["gpu-advisor-api"]
    assert api_service["spec"]["selector"].items() <= labels.items()
    hpa = _by_kind("HorizontalPodAutoscaler")[0]
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert hpa["spec"]["minReplicas"] >= 2
    pdb = _by_kind("PodDisruptionBudget")[0]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    ingress = _by_kind("Ingress")[0]
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == "gpu-advisor-api"
    assert backend["port"]["name"] in {p["name"] for p in api_service["spec"]["ports"]}
    notes = ingress["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert int(notes["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 600


def test_chroma_keeps_its_data_and_the_index_job_builds_it():
    chroma = _by_kind("StatefulSet")[0]
    container = chroma["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["chroma", "run"]
    claim = chroma["spec"]["volumeClaimTemplates"][0]["metadata"]["name"]
    assert claim in {m["name"] for m in container["volumeMounts"]}
    job = _by_kind("Job")[0]
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["gpu-advisor", "kb", "index"]
