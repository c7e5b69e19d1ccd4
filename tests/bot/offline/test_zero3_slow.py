"""Training under ZeRO-3 that is slow with its GPUs busy at low power (issue 24): the reader tells "utilisation
100%, power low" from low utilisation, and the tool leads with ZeRO-3's per-step weight gathers against what
ZeRO-2 exchanges, proposing ZeRO-2 only where fit_training says it fits the card. Texts are development rows of
the real corpus."""

from bot.offline.understand.paste import read_paste
from tests.support.asking import ask, row
from tools.diagnose.diagnose import diagnose
from tools.schemas.diagnose import DiagnoseInput


def test_full_utilisation_at_low_power_is_not_low_utilisation():
    assert read_paste(row("gh-llamafactory-3520")).evidence["symptom"] == "busy_low_power"  # "利用率100%，但是功率很低"
    assert read_paste(row("gh-ms-swift-495")).evidence["symptom"] == "busy_low_power"  # "100%，但功耗只有100W"
    assert read_paste("GPU util is 100% but power draw is only 90W").evidence["symptom"] == "busy_low_power"
    assert read_paste("GPU 利用率只有 30%，功率很低").evidence["symptom"] == "low_gpu_util"


def test_zero2_is_proposed_where_it_fits_and_not_where_it_does_not():
    def causes(model, gpu, n, method):
        return diagnose(DiagnoseInput(model=model, gpu=gpu, n_gpus=n, workload="train", framework="deepspeed",
                                      zero_stage=3, method=method, symptom="busy_low_power")).causes  # fmt: skip

    small = causes("qwen2.5-1.5b", "V100 32GB", 8, "full")
    assert small[0].cause == "communication_bound" and small[0].leads
    assert (small[0].fix.flag, small[0].fix.value) == ("zero_optimization.stage", 2)
    assert "ZeRO-2" in small[0].arithmetic and "fits" in small[0].arithmetic
    big = causes("llama-3.1-70b", "A100 40GB", 8, "full")  # ZeRO-3 is what makes it fit: ZeRO-2 is no fix
    assert all(c.fix.flag != "zero_optimization.stage" or c.fix.value != 2 for c in big)


def test_the_answer_leads_with_the_gathers(advisor, caplog):
    (t,) = ask(advisor, caplog, row("gh-llamafactory-3520"))
    head = t.answer.split("---")[0]
    assert head.startswith("**原因：ZeRO-3") and "14.96 GiB" in head  # Llama-3-8B's 16-bit weights, gathered
    assert "zero_optimization.stage=2" in head and "dataloader_num_workers" not in head
