"""Any input to any calculator gives an output or a clear AdvisorError naming what is wrong — never
another exception, never NaN or a negative figure in the output."""

import math
import types
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools import registry
from tools.catalog.lookup import gpus, models
from tools.errors import AdvisorError

GPU_NAMES = [g.id for g in gpus()] + ["A100 80G", "910B", "4090D", "英伟达H800"]
MODEL_NAMES = [m.id for m in models()] + ["70B", "7b", "700亿参数", "Qwen-72B"]
BAD_NAMES = ["H300", "", "GPT-7", "0B", "-5B"]
BY_FIELD = {
    "gpu": st.one_of(st.sampled_from(GPU_NAMES), st.sampled_from(GPU_NAMES), st.sampled_from(BAD_NAMES)),
    "model": st.one_of(st.sampled_from(MODEL_NAMES), st.sampled_from(MODEL_NAMES), st.sampled_from(BAD_NAMES)),
    "gpus": st.lists(st.sampled_from(GPU_NAMES + BAD_NAMES), max_size=4),
    "tokens": st.one_of(st.sampled_from(["1B", "2T", "10亿", 1_000_000_000, "0", "lots"]), st.integers(-5, 10**13)),
}
NAMES = GPU_NAMES + MODEL_NAMES + BAD_NAMES
NEVER_NEGATIVE = ("_gb", "_cny", "hours", "days", "tokens_per_s", "flops")


def _strategy(annotation):
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return st.one_of(st.sampled_from(args), st.sampled_from(args), st.sampled_from(args), st.just("bogus"))
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*[_strategy(a) for a in args if a is not type(None)], st.none())
    if origin is list:
        return st.lists(st.sampled_from(NAMES), max_size=4)
    if annotation is bool:
        return st.booleans()
    # mostly plausible values (to reach the arithmetic), sometimes impossible ones (to reach the errors)
    if annotation is int:
        plausible = st.sampled_from([1, 2, 4, 8, 16, 64, 512, 2048, 4096])
        return st.one_of(plausible, plausible, plausible, st.integers(-3, 10**9))
    if annotation is float:
        plausible = st.sampled_from([0.3, 0.5, 0.9, 1.0, 8.0, 24.0, 100.0, 1000.0])
        return st.one_of(plausible, plausible, st.floats(-1, 1e9, allow_nan=False))
    if annotation is str:
        return st.one_of(st.sampled_from(NAMES), st.sampled_from(NAMES), st.text(max_size=8))
    return st.none()


def _inputs(name):
    model = registry.get(name).input_model
    fields = {k: BY_FIELD[k] if k in BY_FIELD else _strategy(f.annotation) for k, f in model.model_fields.items()}
    required = {k: fields[k] for k, f in model.model_fields.items() if f.is_required()}
    optional = [k for k in fields if k not in required]
    chosen = st.lists(st.sampled_from(optional), max_size=3, unique=True) if optional else st.just([])
    return st.tuples(st.fixed_dictionaries(required), chosen).flatmap(
        lambda pair: st.fixed_dictionaries(
            {**{k: st.just(v) for k, v in pair[0].items()}, **{k: fields[k] for k in pair[1]}}
        )
    )


def _leaves(node, key=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _leaves(v, key)
    elif isinstance(node, float | int) and not isinstance(node, bool):
        yield key, node


@pytest.mark.parametrize("name", registry.names())
def test_calculator_never_crashes(name):
    @settings(max_examples=120, deadline=None)
    @given(args=_inputs(name))
    def run(args):
        try:
            out = registry.call(name, args)
        except AdvisorError as err:
            assert err.message("en") and err.message("zh")
            return
        for key, value in _leaves(out):
            assert not math.isnan(value), key
            if key.endswith(NEVER_NEGATIVE) and not key.startswith(("headroom", "saving", "margin")):
                assert value >= 0, (key, value)

    run()
