"""POST /v1/proposals: a dated proposal for a job and a budget or deadline (issue 26) — the Markdown document, its
bill of materials as an XLSX workbook and its charts as PNGs (base64), with the plan_system output they were
written from."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, Field

from bot.api.deps import NOT_FOUND, MetricsDep, json_response
from bot.api.json_types import strict_body
from bot.offline.say.proposal import files
from tools import registry
from tools.schemas.plan import PlanSystemInput, PlanSystemOutput


class ProposalInput(PlanSystemInput):
    """The job and its constraints, as for `plan_system`, and the language of the document."""

    lang: Literal["zh", "en"] = Field("zh", description="The language of the proposal: zh or en.")
    hours_per_day: float = Field(24, gt=0, le=24, description="The cost chart: hours a day the cards are busy.")
    months: int = Field(36, ge=1, le=120, description="The cost chart: the horizon in months.")


class ProposalOutput(BaseModel):
    markdown: str = Field(description="The proposal, dated, with its validity date.")
    bom_xlsx_base64: str = Field(description="bom.xlsx (sheets BOM and Options), base64-encoded.")
    charts_png_base64: dict[str, str] = Field(
        description="The charts the Markdown links, by file name (tco.png: rent vs own by month; capacity.png: "
        "cards vs peak load, or hours vs cards), each base64-encoded; a chart without figures is left out."
    )
    plan: PlanSystemOutput


#: the body as the HTTP route reads it: the same model, its JSON types checked (module level, so FastAPI can resolve it)
ProposalBody = strict_body(ProposalInput)


def router() -> APIRouter:
    r = APIRouter(tags=["proposals"])

    @r.post("/proposals", response_model=ProposalOutput, responses=NOT_FOUND)
    def proposal(body: ProposalBody, metrics: MetricsDep) -> Response:  # type: ignore[valid-type]
        """A proposal a sales engineer can send: requirement, options side by side, recommendation, BOM."""
        chart = {"hours_per_day": body.hours_per_day, "months": body.months}
        fields = body.model_dump(exclude={"lang", *chart}, exclude_unset=True)
        inp = registry.validate("plan_system", fields)
        plan = registry.run("plan_system", inp)
        data = plan.model_dump(mode="json")
        made = files(data, {**fields, **chart}, body.lang, dt.date.today())
        out = ProposalOutput(
            markdown=made["proposal.md"].decode("utf-8"),
            bom_xlsx_base64=base64.b64encode(made["bom.xlsx"]).decode("ascii"),
            charts_png_base64={k: base64.b64encode(v).decode("ascii") for k, v in made.items() if k.endswith(".png")},
            plan=plan,
        )
        metrics.tool_calls.labels("plan_system", "ok").inc()
        return json_response(out)

    return r
