"""POST /v1/proposals: a dated proposal for a job and a budget or deadline (issue 26) — the Markdown document and
its bill of materials as an XLSX workbook (base64), with the plan_system output they were written from."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, Field

from bot.api.deps import NOT_FOUND, MetricsDep, json_response
from bot.api.json_types import strict_body
from bot.offline.say.proposal import document, workbook
from tools import registry
from tools.schemas.plan import PlanSystemInput, PlanSystemOutput


class ProposalInput(PlanSystemInput):
    """The job and its constraints, as for `plan_system`, and the language of the document."""

    lang: Literal["zh", "en"] = Field("zh", description="The language of the proposal: zh or en.")


class ProposalOutput(BaseModel):
    markdown: str = Field(description="The proposal, dated, with its validity date.")
    bom_xlsx_base64: str = Field(description="bom.xlsx (sheets BOM and Options), base64-encoded.")
    plan: PlanSystemOutput


#: the body as the HTTP route reads it: the same model, its JSON types checked (module level, so FastAPI can resolve it)
ProposalBody = strict_body(ProposalInput)


def router() -> APIRouter:
    r = APIRouter(tags=["proposals"])

    @r.post("/proposals", response_model=ProposalOutput, responses=NOT_FOUND)
    def proposal(body: ProposalBody, metrics: MetricsDep) -> Response:  # type: ignore[valid-type]
        """A proposal a sales engineer can send: requirement, options side by side, recommendation, BOM."""
        fields = body.model_dump(exclude={"lang"}, exclude_unset=True)
        inp = registry.validate("plan_system", fields)
        plan = registry.run("plan_system", inp)
        data = plan.model_dump(mode="json")
        out = ProposalOutput(
            markdown=document(data, fields, body.lang, dt.date.today()),
            bom_xlsx_base64=base64.b64encode(workbook(data)).decode("ascii"),
            plan=plan,
        )
        metrics.tool_calls.labels("plan_system", "ok").inc()
        return json_response(out)

    return r
