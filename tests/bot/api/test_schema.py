"""schemathesis over /openapi.json against the ASGI app, every check: no 5xx, only documented statuses,
headers and shapes, every schema-valid request accepted and every schema-invalid one refused.

Rules between fields are part of the schema (`dependentSchemas` conditions) or resolved with a stated
assumption, so `positive_data_acceptance` runs too. Random GPU and model names mostly end in 404 before a
calculator runs, so a second pass draws them from the catalog: the calculators then see every option the
schema allows, and the only refusal left is `unsupported`, where the named GPU or model rules the request
out (no FP8 tensor cores, no price on file, tp not dividing its heads), which no schema can know."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import positive_data_acceptance
from schemathesis.config import SchemathesisConfig
from schemathesis.errors import FailureGroup
from schemathesis.generation import GenerationMode

from bot.api.app import create_app
from bot.api.settings import ApiSettings
from tools.catalog.lookup import gpus, models

#: a body over GPU_ADVISOR_MAX_BODY_BYTES is 413 before it is read, whatever the schema says of its content (a
#: limit on bytes no JSON schema can state): a documented refusal, not a schema mismatch, either way
LIMITS = SchemathesisConfig.from_str(
    "[checks.negative_data_rejection]\nexpected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "
    '"5xx"]\n[checks.positive_data_acceptance]\nexpected-statuses = ["2xx", "3xx", 401, 403, 404, 409, 413, 429, '
    '"5xx"]\n'
)

# slow operations (whole answers) get fewer examples; the whole module stays well under a minute
EXAMPLES = {"/v1/ask": 8, "/v1/ask/stream": 5, "/v1/chat/completions": 8, "/v1/tools/recommend_gpus": 8}
NEGATIVE_EXAMPLES = 8
CATALOG_EXAMPLES = 15


@pytest.fixture
def app(advisor):
    # schemathesis calls the app as host "testserver": trusted explicitly (a keyless app answers loopback only)
    conf = ApiSettings(rate_limit_per_minute=0, trusted_hosts="testserver,127.0.0.1:*")
    app = create_app(advisor=advisor, api_settings=conf)
    with TestClient(app):  # runs the lifespan; schemathesis then calls the same app object
        yield app


def check_all(schema, mode: GenerationMode, examples: dict[str, int] | int, **validate: Any) -> list[str]:
    """Every operation's first failure, reported together."""
    failures = []
    for operation in [result.ok() for result in schema.get_all_operations()]:
        count = examples if isinstance(examples, int) else examples.get(operation.path, 20)

        @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode))
        def run(case):
            case.call_and_validate(**validate)

        try:
            run()
        except Unsatisfiable:  # nothing to send that breaks the schema (GET without parameters)
            continue
        except (Exception, FailureGroup) as err:  # a failure group is no Exception
            failures.append(f"{operation.method.upper()} {operation.path}: {err}")
    return failures


def accepted_unless_unsupported(ctx, response, case) -> None:
    """`positive_data_acceptance`, allowing one refusal: the named GPU or model cannot serve the request."""
    if response.status_code in (400, 422):
        error = response.json()["error"]
        assert error["code"] == "unsupported", f"schema-valid request refused: {response.status_code} {error}"


#: schema-valid requests are answered; the one refusal allowed is `unsupported` (the named GPU or model, or a full
#: architecture, rules the request out), checked in place of schemathesis' own acceptance check
ACCEPTANCE = {"excluded_checks": [positive_data_acceptance], "additional_checks": [accepted_unless_unsupported]}


def test_every_schema_valid_request_is_answered(app):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=LIMITS)
    assert len(list(schema.get_all_operations())) >= 20
    # a full architecture in `model` reaches the calculators even with random names, and can rule the request out
    # (tp not dividing its heads): the same one refusal as with catalog names below
    failures = check_all(schema, GenerationMode.POSITIVE, EXAMPLES, **ACCEPTANCE)
    assert not failures, "\n\n".join(failures)


def test_every_schema_invalid_request_is_refused_as_documented(app):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=LIMITS)
    failures = check_all(schema, GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES)
    assert not failures, "\n\n".join(failures)


def catalog_names(raw: dict[str, Any]) -> dict[str, Any]:
    """The tool routes of `raw` with `gpu`, `gpus` and a model's name drawn from the catalog (a narrower
    schema: whatever it allows, the real one allows too)."""
    names = {
        "gpu": sorted(g.name for g in gpus()),
        "model": sorted(m.name for m in models()) + ["7B", "70B", "0.5B", "405B", "700亿参数"],
    }
    raw = copy.deepcopy(raw)
    raw["paths"] = {path: item for path, item in raw["paths"].items() if path.startswith("/v1/tools/")}
    for name, component in raw["components"]["schemas"].items():
        props = component.get("properties", {})
        if "gpu" in props:
            props["gpu"] = {"type": "string", "enum": names["gpu"]}
        if "gpus" in props:
            props["gpus"]["items"] = {"type": "string", "enum": names["gpu"]}
        if "model" in props and name.endswith("Input"):
            model = props["model"]
            arms = model.get("oneOf") or model.get("anyOf")
            if arms:  # keep the architecture object, name catalog models
                for i, arm in enumerate(arms):
                    if arm.get("type") == "string":
                        arms[i] = {"type": "string", "enum": names["model"]}
            else:
                props["model"] = {"type": "string", "enum": names["model"]}
    return raw


def test_catalog_names_reach_every_calculator_and_only_the_catalog_refuses(app):
    with TestClient(app, base_url="http://127.0.0.1") as client:
        raw = client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(catalog_names(raw))
    schema.app = app
    failures = check_all(schema, GenerationMode.POSITIVE, CATALOG_EXAMPLES, **ACCEPTANCE)
    assert not failures, "\n\n".join(failures)
