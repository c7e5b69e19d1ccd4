"""POST /v1/proposals: a dated proposal for a job and a budget or deadline (issue 26) — the Markdown document, its
bill of materials as an XLSX workbook and its charts as PNGs (base64), with the plan_system output they were
written from. GET /v1/proposals/files/{token}/{name}: the files a chat's "生成方案" handed over, by their signed,
expiring link (no key needed: the link is the credential) or with a key that may read the conversation."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from bot.api.deps import NOT_FOUND, AdvisorDep, MetricsDep, json_response
from bot.api.errors import ApiError, request_lang
from bot.api.json_types import strict_body
from bot.api.security import SIGNED_PREFIX, authenticate
from bot.core import attachments
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


def files_router() -> APIRouter:
    """The proposal files of a chat answer: outside the /v1 key dependency, as a signed link carries no key."""
    r = APIRouter(tags=["proposals"])

    @r.get(SIGNED_PREFIX + "{token}/{name}", include_in_schema=False)
    def proposal_file(
        token: str, name: str, request: Request, advisor: AdvisorDep, expires: str | None = None, sig: str | None = None
    ) -> Response:
        """One file of a proposal a chat answer linked, while its link has not expired; 404 otherwise (an unknown,
        expired, forged or another owner's file alike, so none can be probed)."""
        found = attachments.read(token, name)
        ok = False
        if found is not None:
            meta, content, media = found
            if sig is not None:
                ok = attachments.signed(advisor.store.secret(attachments.SECRET_NAME), token, meta, expires, sig)
            else:  # no link signature: a key, as for the rest of /v1, that may read the conversation
                caller = authenticate(request)
                ok = advisor.store.readable(meta["conversation_id"], caller.owner, caller.admin)
        if not ok:
            zh = request_lang(request) == "zh"
            raise ApiError(
                404,
                "没有这个文件，或链接已过期；请在对话里再说一次“生成方案”。"
                if zh
                else "No such file, or its link has expired: ask for the proposal again in the conversation.",
                code="not_found",
            )
        disposition = "inline" if name.endswith(".png") else "attachment"
        return Response(
            content,
            media_type=media,
            headers={"Content-Disposition": f'{disposition}; filename="{name}"', "Cache-Control": "private, no-store"},
        )

    return r
