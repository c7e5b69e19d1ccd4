"""tools/data/frameworks.yaml: every framework fact carries its documentation source, the framework version it
was read for, the date and whether it was verified; the defaults the tool relies on are there."""

import datetime

from tools.diagnose.facts import fact, facts, value


def test_every_fact_has_a_source_a_version_and_a_date():
    for framework, items in facts().items():
        for key, f in items.items():
            src = f["source"]
            assert src["url"].startswith("https://"), (framework, key)
            assert str(src["version"]).strip() and isinstance(src["verified"], bool), (framework, key)
            assert isinstance(src["as_of"], datetime.date), (framework, key)
            assert "value" in f or "rule" in f or "value_gib" in f, (framework, key)


def test_the_defaults_the_diagnosis_reads():
    assert value("vllm", "gpu_memory_utilization") == 0.9
    assert value("deepspeed", "reduce_bucket_size") == 500_000_000
    assert value("deepspeed", "allgather_bucket_size") == 500_000_000
    assert value("deepspeed", "stage3_prefetch_bucket_size") == 50_000_000
    assert value("deepspeed", "stage3_max_live_parameters") == 1_000_000_000
    assert value("sglang", "mem_fraction_static")["tp1"] == 0.88
    assert value("llamafactory", "cutoff_len") == 2048
    assert fact("vllm", "kv_pool_preallocated")["block_tokens"] == 16
