"""POST /v1/catalog/models: add a model from its Hugging Face config.json (issue 25), as `gpu-advisor models add` does.

Stored in the data folder of the advisor's settings, merged with the shipped catalog, and known at once to every
route (/v1/tools/*, /v1/ask, MCP). While the API is open anyone on the host may add one; once keys exist only an
admin key may (403 otherwise). A bad config is a 422 in the caller's language, never a 500. Left out of
/openapi.json, like /v1/tools/{name}: a schema fuzzer would store every config it drew in the data folder.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from bot.api.errors import ApiError, request_lang
from bot.api.security import Caller
from tools.catalog.hf_config import add_from_config


class ModelAddInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] = Field(description="The model's config.json, as a JSON object (transformers' field names).")
    name: str | None = Field(None, max_length=200, description="The name to know it by (else `_name_or_path`).")
    source: str | None = Field(None, max_length=2000, description="Where the config comes from (its URL).")
    replace: bool = Field(False, description="Overwrite a model added before under this name.")


def router() -> APIRouter:
    r = APIRouter(prefix="/catalog", tags=["catalog"])

    @r.post("/models", status_code=201, include_in_schema=False)  # stores what it is sent: not fuzzed
    def add_model(body: ModelAddInput, caller: Caller, request: Request) -> JSONResponse:
        """Add a model from its config.json; answers its catalog record, counts computed from the shape."""
        if caller.key_id is not None and not caller.admin:
            zh = request_lang(request) == "zh"
            raise ApiError(
                403, "只有管理员密钥可以添加模型。" if zh else "Only an admin key may add a model.", code="forbidden"
            )
        spec = add_from_config(body.config, name=body.name, source_url=body.source, replace=body.replace)
        return JSONResponse(spec.model_dump(mode="json"), status_code=201)

    return r
