"""plan_serving: the hand-worked golden cases, what every plan must satisfy, monotone rules, impossible asks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import tools
from tools.plan.replica import per_million, replicas_needed, share
from tools.schemas.plan import DEFAULT_SERVING_GPUS

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = yaml.safe_load((ROOT / "tests/golden/serving.yaml").read_text(encoding="utf-8"))


def plan(**args) -> dict:
    return tools.call("plan_serving", {"model": "Qwen3-32B", **args})


def one(out: dict, gpu: str, precision: str) -> dict:
    return next(c for c in out["candidates"] if gpu in c["gpu"] and c["precision"] == precision)


@pytest.mark.parametrize("case", GOLDEN["traffic"], ids=lambda c: c["id"])
def test_traffic_golden(case):
    out = tools.call("plan_serving", case["args"])
    for key, want in case["expect"].items():
        assert out[key] == (want if isinstance(want, str) else pytest.approx(want, rel=1e-3)), key


@pytest.mark.parametrize("case", GOLDEN["replica"], ids=lambda c: c["id"])
def test_replica_share_golden(case):
    got = share(**case["args"])
    for key, want in case["expect"].items():
        assert getattr(got, key) == pytest.approx(want, rel=1e-4), key


@pytest.mark.parametrize("case", GOLDEN["replicas"])
def test_replica_count_golden(case):
    assert replicas_needed(case["in_flight"], case["headroom"], case["batch"]) == case["expect"]


@pytest.mark.parametrize("case", GOLDEN["cost"])
def test_cost_per_million_golden(case):
    assert per_million(case["price"], case["tp"], case["tokens_per_s"]) == pytest.approx(case["expect"], abs=0.01)


def test_the_issue_question_compares_h20_and_4090_with_int4_and_ends_in_a_pick():
    """客服大模型 Qwen3-32B，日活 5000，高峰并发 200：H20 还是 4090？"""
    out = plan(gpus=["H20", "RTX 4090"], concurrency=200, daily_users=5000)
    assert {(c["gpu"], c["precision"]) for c in out["candidates"]} == {
        ("NVIDIA H20 96GB", "bf16"),
        ("NVIDIA H20 96GB", "int4"),
        ("NVIDIA GeForce RTX 4090", "bf16"),
        ("NVIDIA GeForce RTX 4090", "int4"),
    }
    assert out["pick"] in {f"{c['gpu']} {c['precision']}" for c in out["candidates"] if c["meets_targets"]}
    h20 = one(out, "H20", "bf16")
    # 32.8B bf16 weights (65.6 GB) need a 4-way split on 24 GB 4090s (3 × 24 GB is too little with the KV cache);
    # int4 weights (about 18 GB) fewer; the H20's replica size is whichever needs the fewest GPUs in all
    assert one(out, "4090", "bf16")["gpus_per_replica"] == 4
    assert one(out, "4090", "int4")["gpus_per_replica"] < 4
    assert h20["gpus_per_replica"] in (1, 2, 4, 8)
    # 200 in flight do not fit one replica's targets: several replicas, each batch within what memory holds
    assert h20["replicas"] > 1 and h20["cny_per_million_tokens"]["rent"] > 0


def test_every_candidate_is_consistent_with_its_own_figures():
    out = plan(gpus=list(DEFAULT_SERVING_GPUS), concurrency=120, prompt_tokens=2000, output_tokens=400)
    assert out["candidates"]
    for c in out["candidates"]:
        if c["gpus_per_replica"] is None:
            assert c["unmet"] == ["fit"] and c["n_gpus"] == 0
            continue
        assert c["n_gpus"] == c["replicas"] * c["gpus_per_replica"]
        assert c["replicas"] >= max(c["replicas_for_memory"], c["replicas_for_throughput"])
        assert 1 <= c["batch_per_replica"] <= c["max_batch_per_replica"]
        assert c["replicas"] * c["batch_per_replica"] >= 120  # the peak is served
        if c["meets_targets"]:
            assert c["ttft_s"] <= 2.0 and c["tokens_per_s_per_user"] >= 20


def test_memory_limits_the_batch_when_targets_are_loose():
    """A long context and a slow per-user target: the KV cache, not speed, sets the batch."""
    c = one(
        plan(
            gpus=["RTX 4090"],
            concurrency=100,
            prompt_tokens=16000,
            tokens_per_s_per_user=2,
            ttft_s=60,
            precision="bf16",
        ),
        "4090",
        "bf16",
    )
    assert c["limited_by"] == "memory" and c["replicas_for_memory"] >= c["replicas_for_throughput"]


def test_china_purchasable_never_picks_an_export_restricted_card():
    out = plan(gpus=["H800", "H20"], concurrency=50, china_purchasable=True)
    assert one(out, "H800", "bf16")["export_restricted"] is True  # shown, flagged
    assert out["pick"].startswith("NVIDIA H20")


def test_impossible_ttft_says_what_cannot_be_met_and_the_nearest():
    out = plan(gpus=list(DEFAULT_SERVING_GPUS), concurrency=200, ttft_s=0.001)
    assert out["pick"] is None and out["pick_reason"] == "none_meets_targets"
    assert out["unmet"] == ["ttft_s"]
    assert "TTFT" in out["nearest"] and "GPUs per replica" in out["nearest"]


def test_a_target_no_replica_count_reaches_does_not_multiply_the_cards():
    """TTFT 1 ms is below what one request alone gets on any card: more replicas never reach it, so the nearest
    plan is sized on memory and the per-user speed it can meet, not one request per replica (200 × 1.2 replicas)."""
    out = plan(gpus=["H20", "A100"], concurrency=200, ttft_s=0.001)
    loose = plan(gpus=["H20", "A100"], concurrency=200, ttft_s=600)
    for c in out["candidates"]:
        assert c["unmet"] == ["ttft_s"]
        assert c["tokens_per_s_per_user"] >= 20  # the target that can be met still holds
        assert c["batch_per_replica"] > 1
        same = one(loose, c["gpu"], c["precision"])
        assert c["n_gpus"] <= same["n_gpus"]  # no more cards than the plan that meets every other target


def test_beyond_max_gpus_says_how_much_the_cap_serves():
    out = plan(gpus=["H20"], daily_users=10**10)
    for c in out["candidates"]:
        assert "max_gpus" in c["unmet"] and c["limited_by"] == "capacity"
        assert "exceed max_gpus 100000" in c["note"] and "in flight" in c["note"]
    assert out["pick"] is None


def test_a_model_larger_than_one_node_is_said_not_raised():
    out = tools.call("plan_serving", {"model": "DeepSeek-R1", "gpus": ["RTX 4090"], "concurrency": 10})
    assert all(c["unmet"] == ["fit"] and "8-GPU node" in c["note"] for c in out["candidates"])


def test_no_traffic_plans_one_request_in_flight_and_says_so():
    """Every schema-valid request is answered (the API's contract): the missing traffic is a stated assumption."""
    out = plan(gpus=["H20"])
    assert out["concurrency"] == 1 and out["traffic_source"] == "concurrency"
    note = next(a for a in out["assumptions"] if a["key"] == "concurrency")
    assert note["value"] == 1 and "no traffic given" in note["note"]


# --- monotone rules (Hypothesis) ------------------------------------------------------------------

SMALL = settings(max_examples=15, deadline=None)


def _gpus(**args) -> int:
    return one(plan(gpus=["H20"], precision="bf16", **args), "H20", "bf16")["n_gpus"]


@SMALL
@given(c=st.integers(1, 5000), extra=st.integers(0, 5000))
def test_more_traffic_never_needs_fewer_gpus(c, extra):
    assert _gpus(concurrency=c) <= _gpus(concurrency=c + extra)


@SMALL
@given(rate=st.floats(1, 60), more=st.floats(0, 40))
def test_a_faster_per_user_target_never_needs_fewer_gpus(rate, more):
    assert _gpus(concurrency=300, tokens_per_s_per_user=rate) <= _gpus(
        concurrency=300, tokens_per_s_per_user=rate + more
    )


@SMALL
@given(h=st.floats(0, 2), more=st.floats(0, 2))
def test_more_headroom_never_needs_fewer_gpus(h, more):
    assert _gpus(concurrency=300, headroom=h) <= _gpus(concurrency=300, headroom=h + more)


@SMALL
@given(prompt=st.integers(100, 30000), more=st.integers(0, 30000))
def test_a_longer_prompt_never_needs_fewer_gpus(prompt, more):
    loose = {"concurrency": 100, "ttft_s": 600}
    assert _gpus(prompt_tokens=prompt, **loose) <= _gpus(prompt_tokens=prompt + more, **loose)


def test_candidates_carry_the_contract_fields():
    """DESIGN.md: per candidate batch_per_replica, gpus_per_replica, replicas, n_gpus, limited_by, ttft_s,
    tokens_per_s_per_user, cny_per_million_tokens {rent, own}."""
    c = plan(gpus=["H20"], concurrency=10)["candidates"][0]
    assert {
        "batch_per_replica",
        "gpus_per_replica",
        "replicas",
        "n_gpus",
        "limited_by",
        "ttft_s",
        "tokens_per_s_per_user",
        "cny_per_million_tokens",
    } <= set(c)
    assert set(c["cny_per_million_tokens"]) == {"rent", "own"}


def test_a_batch_beyond_what_the_speed_model_takes_is_capped_not_a_crash():
    """A 0.5B model with one-token requests on a 141 GB card holds ~750k sequences; inference_speed models at most
    100,000 in a batch: the search stops there (found by schemathesis through /v1/tools/plan_serving)."""
    out = tools.call(
        "plan_serving",
        {
            "model": "0.5B",
            "gpus": ["H200"],
            "prompt_tokens": 1,
            "output_tokens": 1,
            "concurrency": 10**9,
            "tokens_per_s_per_user": 1e-6,
            "ttft_s": 600,
        },
    )
    c = out["candidates"][0]
    assert c["max_batch_per_replica"] > 100_000 and c["batch_per_replica"] <= 100_000
    assert c["n_gpus"] == c["replicas"] * c["gpus_per_replica"]


def test_a_context_window_sizes_the_kv_cache_while_each_request_prefills_its_prompt():
    """5 users of a 70B with a 128k window (vllm#12400): held per request, the window sets the batch memory allows
    as a 128k prompt does, but the first token comes after the request's own prompt, not after 128k tokens."""
    base = {"model": "llama-3.3-70b", "gpus": ["H800"], "concurrency": 5, "precision": "int8"}
    held = tools.call("plan_serving", {**base, "context_tokens": 131072})
    fresh = tools.call("plan_serving", {**base, "prompt_tokens": 131072 - 300})
    h, f = held["candidates"][0], fresh["candidates"][0]
    assert held["context_tokens"] == 131072 and fresh["context_tokens"] is None
    assert h["max_batch_per_replica"] == f["max_batch_per_replica"]  # the same KV memory per request
    assert h["ttft_s"] < 2 < f["ttft_s"]  # prefilling 1,000 tokens vs 130,772
    assert any(a["key"] == "context_tokens" for a in held["assumptions"])


def test_a_card_whose_fewest_gpus_split_no_heads_is_no_fit_said_not_an_error():
    # Qwen2-57B-A14B has 28 attention heads: bf16 on 24 GB cards needs 8 per replica, and 8 does not divide 28
    # (engines refuse that tensor-parallel size), so the card gets no layout, with the reason; int4 still plans
    from tools import registry

    out = registry.call("plan_serving", {"model": "Qwen2-57B-A14B", "gpus": ["NVIDIA A10 24GB"]})
    by = {c["precision"]: c for c in out["candidates"]}
    assert by["bf16"]["n_gpus"] == 0 and by["bf16"]["unmet"] == ["fit"]
    assert "28 attention heads" in by["bf16"]["note"]
    assert by["int4"]["n_gpus"] >= 1
