"""Find the figures in an answer (Chinese or English markdown), with their units.

`extract_numbers(text)` returns every figure a reader would take as a claim: "1,120 GB", "6–9万元",
"8×H800" (8 GPUs), "3.2×", "2T tokens", "70B" (7e10 parameters), "15~25 元/卡时", "1.2e21 FLOPs".
Each `Number` carries the span as written, its value in base units (magnitude words applied:
"6万" = 60000, "2万亿" = 2e12), a normalised unit and `tolerance`: half a unit in the last digit
written, so "172万" stands for anything within 5,000 of 1,720,000.

Ignore policy (what is NOT a figure; these spans are masked before scanning):
  * code: fenced blocks and `inline code`; URLs and markdown link targets;
  * citation and footnote markers: "[1]", "[^2]", "【3】", "[kb:tco-breakeven#3]", bare "kb:doc#3";
  * dates and times: "2026-11-29", "2024年5月", "2023年", "in 2024", "(2023)", "Nov 2024", "10:30";
  * ordinals and structure: list markers ("1.", "2)", "3、", "（1）"), heading numbers ("## 2.1"),
    "第3", "step 1", "方案 2", "option 3", "Top-5", "#3", "表 1", "Figure 2";
  * names and versions: any token that starts with a letter and holds a digit ("A100", "H800",
    "Qwen2.5-72B", "Llama-3.1-8B", "ZeRO-3", "fp16", "bf16", "int4", "NF4", "GPT-4o", "call_1",
    "A100-80GB" — a SKU name); a product word followed by a version ("CUDA 12.1", "PyTorch 2.3",
    "RTX 4090", "Ascend 910B", "Llama 3", "PCIe 5.0"); bare chip numbers "910B", "4090"; "8x7B";
  * precision widths: "4-bit", "8 bit", "16 位";
  * a digit glued to letters that are not a unit ("3D", "1F1B", "2nd").
Signs are not part of a figure: "-30%" is 30 % (a "-" before a digit is a dash or a range far more
often than a sign). Numbers spelled in Chinese or English words ("两种", "three") are not extracted.
Parallel degrees ("TP=8") ARE figures: they come from the tool inputs and must be grounded there.

Small-integer policy: an integer 0–10 with no unit, magnitude, decimal point or sign of a figure
is a count in prose ("3 个建议", "2 options") and gets `prose_count=True`; the grounding step
accepts it without a source. It loses that status inside a table row or right after "=", ":",
"≈", "约", "~", "about", "approximately" and the like, where a bare number is a figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from bot.grounding.masking import mask
from bot.grounding.normalize import normalize
from bot.grounding.units import CURRENCIES, DENOM_RE, DENOMS, END, UNIT_RE, UNIT_SPECS, UNITS

__all__ = ["UNITS", "Number", "extract_numbers", "name_sizes"]


@dataclass(frozen=True, slots=True)
class Number:
    """One figure found in a text.

    `value` is in base units of `unit` after magnitude words ("6万元" -> 60000, "CNY";
    "70B" -> 7e10, "params"); `tolerance` is half a unit of the last written digit, in the same
    unit. `alt_values` are other readings of the same text ("128K" may be 131,072).
    """

    text: str
    value: float
    unit: str
    start: int
    end: int
    tolerance: float = 0.0
    prose_count: bool = False
    alt_values: tuple[float, ...] = ()


_MAGS = {
    "万亿": 1e12,
    "千亿": 1e11,
    "百亿": 1e10,
    "十亿": 1e9,
    "亿": 1e8,
    "千万": 1e7,
    "百万": 1e6,
    "十万": 1e5,
    "万": 1e4,
    "千": 1e3,
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
    "K": 1e3,
    "k": 1e3,
    "M": 1e6,
    "B": 1e9,
    "T": 1e12,
}
_MAG_RE = re.compile(
    rf"[ \t]?(?P<zh>万亿|千亿|百亿|十亿|亿|千万|百万|十万|万|千(?!瓦))|[ \t](?P<en>thousand|million|billion|trillion){END}"
    r"|(?P<letter>[KkMBT])(?![A-Za-z0-9_])"
)
_NUM_RE = re.compile(r"(?<![A-Za-z0-9_.\x01\x02])([0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?)")
_SCI_RE = re.compile(
    r"[eE](?P<e1>[+-]?[0-9]{1,3})(?![0-9A-Za-z])|[ \t]?[×xX*][ \t]?10[ \t]?(?:\^|\*\*)[ \t]?"
    r"(?P<e2>[+-]?[0-9]{1,3})|[ \t]?×[ \t]?10(?P<e3>[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)"
)
_SUP = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
_TIMES_COUNT_RE = re.compile(r"[ \t]?[×xX✕][ \t]?(?=\x02|GPU|卡|显卡)")
_TIMES_RATIO_RE = re.compile(r"[ \t]?[×xX✕](?![A-Za-z0-9_])(?![ \t]*[0-9])")
_BEFORE_GPU_RE = re.compile(r"[ \t]?\x02+")
_CURRENCY_BEFORE_RE = re.compile(r"(?:[¥￥]|US\$|\$|RMB[ \t]?|CNY[ \t]?|USD[ \t]?)$")
_RANGE_SEP_RE = re.compile(r"[ \t]*(?:-|–|—|~|～|〜|至|到|to)[ \t]*")
_YEAR_RE = re.compile(r"(?:199[0-9]|20[0-3][0-9])")
_YEAR_CUE_RE = re.compile(
    r"(?<![A-Za-z])(?:in|since|by|until|from|during|before|after|with|than|vs\.?|versus|of|to|and|early|late|mid"
    r"|as of|year|Q[1-4]|H[12])[ \t,]*$|(?:截至|截止|于|在|年份)[ \t]*$",
    re.I,
)
_FIGURE_CUE_RE = re.compile(
    r"(?:[=:：≈~～<>≥≤±×*]|约|大约|并行度|批大小|秩|(?<![A-Za-z])(?:about|around|approximately|roughly|batch|batch size"
    r"|bs|rank|TP|PP|DP|EP|CP|stage|epochs?|degree))$",
    re.I,
)

_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"

# checked where a number starts: spans that are not figures (dates, times, bit widths, "8x7B")
_SKIP_AT_RE = re.compile(
    r"(?:19|20)[0-9]{2}[ \t]*[-–~至到][ \t]*(?:19|20)[0-9]{2}(?:[ \t]*年)?(?![0-9])"
    r"|(?:19|20)[0-9]{2}[ \t]*年[ \t]*[0-9]{1,2}[ \t]*月(?:[ \t]*[0-9]{1,2}[ \t]*[日号])?"
    r"|(?:19|20)[0-9]{2}[-/][0-9]{1,2}(?:[-/][0-9]{1,2})?(?![0-9])"
    r"|(?:19|20)[0-9]{2}\.[0-9]{1,2}\.[0-9]{1,2}(?![0-9])"  # "2024.5" alone is a decimal ("2024.5 万元"): checked
    r"|(?:19|20)[0-9]{2}[ \t]*(?:年度?|财年)"
    r"|[0-9]{1,2}[ \t]*月[ \t]*[0-9]{1,2}[ \t]*[日号]"
    rf"|[0-9]{{1,2}}[ \t]+{_MONTHS}[ \t]+(?:19|20)[0-9]{{2}}(?![0-9])"
    r"|[0-9]{1,2}:[0-9]{2}(?![0-9])"
    r"|[0-9]{1,2}[ \t]?-?[ \t]?(?:bits?(?![A-Za-z])|位)"
    r"|[0-9]+x[0-9]+(?:\.[0-9]+)?[BM](?![A-Za-z0-9])"
)
# checked on the text just before a number: ordinals ("第 3", "step 1", "#4") and "Nov 2024"
_SKIP_AFTER_RE = re.compile(
    r"(?:第|步骤|方案|选项|#|No\.|[Ss]tep|[Oo]ption|[Pp]lan|[Tt]able|[Ff]igure|[Tt]op|表|图)[ \t]*-?[ \t]*$"
    rf"|(?<![A-Za-z]){_MONTHS}[ \t]+(?:[0-9]{{1,2}},?[ \t]+)?$"
)
_YEAR_IN_PARENS_RE = re.compile(r"[(（](?:19|20)[0-9]{2}[)）]")
_GPU_TIMES_RE = re.compile(r"\x02[ \t]*[×xX✕*][ \t]*([0-9]+)(?![0-9A-Za-z.])")


def _half_unit(num: str) -> float:
    """Half a unit of the last written digit. Two or more trailing zeros of an integer may be
    rounding, but the first two digits always count: "1,200" -> ±50, "100" -> ±5, "1,720,000" -> ±5,000,
    while "1,120", "1,720,320" and "80" are read as exact to the unit (±0.5)."""
    num = num.replace(",", "")
    if "." in num:
        return 0.5 * 10.0 ** -len(num.split(".")[1])
    digits = num.lstrip("0") or "0"
    zeros = len(digits) - len(digits.rstrip("0"))
    if zeros < 2:
        return 0.5
    return 0.5 * 10.0 ** (len(digits) - max(len(digits) - zeros, 2))


def _line_context(masked: str, pos: int) -> tuple[bool, str]:
    line_start = masked.rfind("\n", 0, pos) + 1
    before = masked[line_start:pos]
    return before.lstrip().startswith("|"), before.rstrip(" \t*_")


def extract_numbers(text: str) -> list[Number]:
    """Every figure in `text`, in order, with value in base units and a normalised unit.

    Figures in disguise (Chinese numerals, full-width or other Unicode digits, digits split by
    invisible characters or spaces) are read as the plain figures they stand for (`normalize`); each
    `Number` still carries the span of `text` a reader sees."""
    plain, starts, ends = normalize(text)
    found = _extract_plain(plain)
    if plain == text:
        return found
    out = []
    for n in found:
        start, end = starts[n.start], ends[n.end - 1] if n.end > n.start else starts[n.start]
        out.append(replace(n, text=text[start:end], start=start, end=end))
    return out


def _extract_plain(text: str) -> list[Number]:
    masked = mask(text)
    found: list[Number] = []
    for m in _GPU_TIMES_RE.finditer(masked):  # "H800×8", "A100 x8"
        s, e = m.span(1)
        found.append(Number(text[m.start() + 1 : e].strip(), float(m.group(1)), "GPU", m.start() + 1, e, 0.5))
        masked = masked[:s] + " " * (e - s) + masked[e:]
    last_end = 0
    for m in _NUM_RE.finditer(masked):
        if m.start() < last_end:
            continue  # the exponent of "1.2×10^21" was read with its mantissa; the rest of a date
        if skip := _SKIP_AT_RE.match(masked, m.start()):
            last_end = skip.end()
            continue
        if _SKIP_AFTER_RE.search(masked, max(0, m.start() - 16), m.start()) or _YEAR_IN_PARENS_RE.match(
            masked, m.start() - 1
        ):
            continue
        n = _parse_at(text, masked, m)
        if n is not None:
            found.append(n)
            last_end = n.end
    found.sort(key=lambda n: n.start)
    return _merge_ranges(found, text, masked)


def _parse_at(text: str, masked: str, m: re.Match) -> Number | None:
    raw = m.group(1)
    start, pos = m.start(), m.end()
    value = float(raw.replace(",", ""))
    tol = _half_unit(raw)
    plain = "." not in raw
    sci = _SCI_RE.match(masked, pos)
    if sci:
        exp = int((sci.group("e1") or sci.group("e2") or sci.group("e3") or "0").translate(_SUP))
        exp = max(-300, min(300, exp))  # "1e999" is still a figure (to be grounded), not a crash
        value, tol, pos, plain = value * 10.0**exp, tol * 10.0**exp, sci.end(), False
    mag_word = ""
    mag = _MAG_RE.match(masked, pos)
    if mag:
        mag_word = mag.group("zh") or mag.group("en") or mag.group("letter")
        value, tol, pos, plain = value * _MAGS[mag_word], tol * _MAGS[mag_word], mag.end(), False
    unit = ""
    cur = _CURRENCY_BEFORE_RE.search(masked, max(0, start - 4), start)
    if cur:
        start = cur.start()
        unit = "USD" if "$" in cur.group() or "USD" in cur.group() else "CNY"
    if not unit and (hit := _TIMES_COUNT_RE.match(masked, pos)):
        unit, pos = "GPU", hit.end()
    elif not unit and (hit := _TIMES_RATIO_RE.match(masked, pos)):
        unit, pos = "x", hit.end()
    elif hit := UNIT_RE.match(masked, pos):
        u = UNIT_SPECS[int(hit.lastgroup[1:])][0]  # type: ignore[index]
        if not unit or u in CURRENCIES:
            unit, pos = u, hit.end()
    elif not unit and (hit := _BEFORE_GPU_RE.match(masked, pos)):
        after = UNIT_RE.match(masked, hit.end())  # "2.788M H800 GPU 小时" is GPU-hours
        if after and UNIT_SPECS[int(after.lastgroup[1:])][0] == "GPU-h":  # type: ignore[index]
            unit, pos = "GPU-h", after.end()
        else:
            unit = "GPU"  # "8 A100"
    if unit in CURRENCIES and (den := DENOM_RE.match(masked, pos)):
        unit, pos = f"{unit}/{DENOMS[int(den.lastgroup[1:])][0]}", den.end()  # type: ignore[index]
    zh_mag = bool(mag and mag.group("zh"))  # "30万how long": a Chinese magnitude word ends the figure
    if not unit and not zh_mag and pos < len(masked) and re.match(r"[A-Za-z0-9_]", masked[pos]):
        return None  # "3D", "1F1B", "2nd": part of a name
    if not unit and mag_word in ("B", "T", "M"):
        unit = "params"  # "70B", "1.8T"
    alt = (value * 1.024,) if mag_word in ("K", "k") else ()
    prose = False
    if not unit and plain:
        in_table, before = _line_context(masked, start)
        if _YEAR_RE.fullmatch(raw) and not in_table and _YEAR_CUE_RE.search(before):
            return None  # "compared with 2023", "in 2024", "截至 2025"
        prose = value <= 10 and not in_table and not _FIGURE_CUE_RE.search(before)
        prose = prose and not re.match(r"[ \t]?[:：][ \t]?[0-9]", masked[pos : pos + 3])  # "3:1" is a ratio
    span = text[start:pos].rstrip()
    return Number(span, value, unit, start, start + len(span), tol, prose, alt)


def _merge_ranges(found: list[Number], text: str, masked: str) -> list[Number]:
    """Ranges ("6–9万元", "15~25 元/卡时", "2-3x"): both ends are figures; the unit (and a magnitude
    given only after the second end) applies to both."""
    out = list(found)
    for i in range(len(out) - 1):
        a, b = out[i], out[i + 1]
        sep = _RANGE_SEP_RE.fullmatch(masked, a.end, b.start)
        if not sep or b.start == a.end:
            continue
        a_value, a_tol, a_unit, b_unit = a.value, a.tolerance, a.unit, b.unit
        b_mag = _MAG_RE.search(masked, b.start, b.end)
        if b_mag and not _MAG_RE.search(masked, a.start, a.end):
            factor = _MAGS[b_mag.group("zh") or b_mag.group("en") or b_mag.group("letter")]
            a_value, a_tol = a_value * factor, a_tol * factor
        if not a_unit or (a_unit in CURRENCIES and b_unit.startswith(a_unit + "/")):
            a_unit = b_unit  # "6–9万元", "$4 to $3.2 per hour"
        if not b_unit:
            b_unit = a_unit
        s, e = a.start, b.end
        if b_unit in CURRENCIES and (den := DENOM_RE.match(masked, e)):  # "$1.8–2.5/GPU-hour"
            a_unit = b_unit = f"{b_unit}/{DENOMS[int(den.lastgroup[1:])][0]}"  # type: ignore[index]
            e = den.end()
        out[i] = replace(
            a, text=text[s:e], value=a_value, tolerance=a_tol, unit=a_unit, prose_count=False, start=s, end=e
        )
        out[i + 1] = replace(b, text=text[s:e], unit=b_unit, prose_count=False, start=s, end=e)
    return out


_NAME_SIZE_RE = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?)[ \t]?([BMT])(?![A-Za-z0-9])")
_NAME_GB_RE = re.compile(r"(?<![0-9.])([0-9]{2,3})[ \t]?(GB|G)(?![A-Za-z0-9])")


def name_sizes(text: str) -> list[Number]:
    """Sizes inside names, for sources only: "Llama-3.1-70B" holds 7e10 params, "A100-80GB" 80 GB.

    An answer that says "70B" is grounded by a question or tool output naming "Llama-3.1-70B".
    """
    out = [
        Number(m.group(), float(m.group(1)) * _MAGS[m.group(2)], "params", m.start(), m.end(), 0.5 * _MAGS[m.group(2)])
        for m in _NAME_SIZE_RE.finditer(text)
    ]
    out += [Number(m.group(), float(m.group(1)), "GB", m.start(), m.end(), 0.5) for m in _NAME_GB_RE.finditer(text)]
    return out
