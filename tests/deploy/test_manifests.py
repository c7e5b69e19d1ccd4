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
TOOL_PARSERS = {
    "Qwen/Qwen2.5": "hermes",
    "Qwen/Qwen3": "hermes",
    "deepseek-ai/DeepSeek-V3": "deepseek_v3",
    "meta-llama/Llama-3": "llama3_json",
}


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
    schema = json.loads(
        resources.files("check_jsonschema.builtin_schemas.vendor")
        .joinpath("compose-spec.json")
        .read_text(encoding="utf-8")
    )
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(_compose()), key=lambda e: list(e.path))
    assert [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors] == []


def test_the_schema_check_catches_a_typo():
    schema = json.loads(
        resources.files("check_jsonschema.builtin_schemas.vendor")
        .joinpath("compose-spec.json")
        .read_text(encoding="utf-8")
    )
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
    from bot.api.settings import ApiSettings
    from bot.channels.settings import WeComSettings
    from bot.core.settings import Settings

    defaults = Settings.model_fields
    longest = max(
        defaults["llm_timeout_s"].default * defaults["llm_max_steps"].default,
        ApiSettings.model_fields["answer_deadline_s"].default,  # the API's own cut-off (504)
        WeComSettings.model_fields["stream_window_s"].default,
    )
    assert read_timeout > longest
    mounted = _compose()["services"]["nginx"]["volumes"][0].split(":")[0]
    assert (DEPLOY / mounted).resolve() == DEPLOY / "nginx.conf"


def test_the_proxies_let_slacks_larger_event_bodies_through_to_the_app():
    from bot.api.app import SLACK_BODY_BYTES

    slack = re.search(r"location = /slack/events \{(.*?)\}", (DEPLOY / "nginx.conf").read_text(encoding="utf-8"), re.S)
    assert slack and re.search(r"client_max_body_size 1m;", slack.group(1)) and "proxy_pass" in slack.group(1)
    ingress = next(
        i for i in _by_kind("Ingress") if i["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/slack/events"
    )
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


# ---- settings the deployment passes are settings the program reads ----------------------------------

#: read by chromadb itself, not by a settings class of this project
FOREIGN = {"ANONYMIZED_TELEMETRY"}
#: what turns each chat channel on (the WeCom long connection runs as `gpu-advisor wecom connect`, not the API)
CHANNEL_SECRETS = {
    "WECOM_AIBOT_TOKEN",
    "WECOM_AIBOT_AES_KEY",
    "WECOM_CORP_ID",
    "WECOM_AGENT_ID",
    "WECOM_APP_SECRET",
    "WECOM_APP_TOKEN",
    "WECOM_APP_AES_KEY",
    "SLACK_BOT_TOKEN",
    "SLACK_SIGNING_SECRET",
}


def _known_names() -> set[str]:
    from bot.api.settings import ApiSettings
    from bot.channels.settings import DeliverySettings, WeComSettings
    from bot.channels.slack.settings import SlackSettings
    from bot.core.settings import Settings
    from knowledge.config import KnowledgeSettings

    names = {name.upper() for name in KnowledgeSettings.model_fields}
    for cls in (Settings, ApiSettings, DeliverySettings, WeComSettings, SlackSettings):
        for field in cls.model_fields.values():
            names |= {c for c in field.validation_alias.choices if c.isupper()}
    return names


def test_every_setting_the_deployment_passes_is_one_the_program_reads():
    known = _known_names() | FOREIGN
    compose = _compose()["services"]
    passed = {
        "compose api": set(compose["api"]["environment"]),
        "compose kb-index": set(compose["kb-index"]["environment"]),
        "k8s ConfigMap": set(_by_kind("ConfigMap")[0]["data"]),
        "k8s Secret": set(_by_kind("Secret")[0]["stringData"]),
        "k8s Deployment": {
            e["name"] for e in _by_kind("Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["env"]
        },
    }
    assert {where: sorted(names - known) for where, names in passed.items() if names - known} == {}
    # and the channels' secrets reach the workers in both shapes
    assert CHANNEL_SECRETS <= passed["compose api"] and CHANNEL_SECRETS <= passed["k8s Secret"]


def test_the_wecom_ai_bot_reaches_one_worker_and_other_routes_spread():
    """/wecom/aibot's streams live in the memory of the worker that took the message: both proxies pin it
    to one worker with a constant hash key, and only that route."""
    conf = (DEPLOY / "nginx.conf").read_text(encoding="utf-8")
    upstreams = dict(re.findall(r"upstream (\w+) \{(.*?)\}", conf, re.S))
    aibot = re.search(r"location = /wecom/aibot \{.*?proxy_pass http://(\w+);", conf, re.S).group(1)
    general = re.search(r"location / \{.*?proxy_pass http://(\w+);", conf, re.S).group(1)
    assert re.search(r"^\s*hash [\w-]+;", upstreams[aibot], re.M)  # a constant: no $variable
    assert "hash" not in upstreams[general]
    ingresses = {i["metadata"]["name"]: i for i in _by_kind("Ingress")}
    pinned = [
        i for i in ingresses.values() if "nginx.ingress.kubernetes.io/upstream-hash-by" in i["metadata"]["annotations"]
    ]
    assert len(pinned) == 1
    path = pinned[0]["spec"]["rules"][0]["http"]["paths"][0]
    assert (path["path"], path["pathType"]) == ("/wecom/aibot", "Exact")
    assert "$" not in pinned[0]["metadata"]["annotations"]["nginx.ingress.kubernetes.io/upstream-hash-by"]
    # its own Service over the same pods, so the hash rule does not apply to the API's other routes
    service = {s["metadata"]["name"]: s for s in _by_kind("Service")}[path["backend"]["service"]["name"]]
    api_service = ingresses["gpu-advisor"]["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"]
    assert service["metadata"]["name"] != api_service
    assert (
        service["spec"]["selector"]
        == {s["metadata"]["name"]: s for s in _by_kind("Service")}[api_service]["spec"]["selector"]
    )
    assert {r["host"] for r in pinned[0]["spec"]["rules"]} == {
        r["host"] for r in ingresses["gpu-advisor"]["spec"]["rules"]
    }


class _StrictLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys without a word; Kubernetes and Docker Compose reject the file
    (or silently take one of them), so a repeated setting is a defect."""


def _no_repeated_keys(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    keys = [k.value for k, _ in node.value if k.value != "<<"]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise yaml.constructor.ConstructorError(None, None, f"repeated keys {repeated}", node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_repeated_keys)


@pytest.mark.parametrize("path", sorted([DEPLOY / "compose.yaml", *K8S.glob("*.yaml")]), ids=lambda p: p.name)
def test_no_setting_is_written_twice(path):
    list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_StrictLoader))
