"""The registry API for skills (docs/design.md §15): Markdown in, parsed fields out.

Every change of a skill's source is a new immutable version (``capabilities.services.skills``, the
same service admin and ``import_skills`` use); saving the same source adds none, so export then
import changes nothing. Refusals are 422 with ``details.errors: [{"filename", "line", "field",
"message"}]`` and save nothing — a tool-name conflict with another skill of an agent included.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.http import HttpResponse
from django.utils.datastructures import MultiValueDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import BaseParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.errors import Unprocessable
from agui_app.selectors.registry import skill_or_404, skill_version_or_404, tenant_agent_or_404
from agui_app.transports.rest.base import ErrorSerializer, page_of
from agui_app.transports.rest.registry.base import RegistryAPIView, bundle_refusal, skill_refusal
from agui_app.transports.rest.registry.serializers import (
    SkillImportResponse,
    SkillImportUpload,
    SkillParsedSerializer,
    SkillSerializer,
    SkillSourceSerializer,
    SkillValidateSerializer,
    SkillValidResponse,
    SkillVersionSerializer,
    skill_body,
    version_body,
)
from capabilities.bundles import BundleUnreadable, read_bundle
from capabilities.models import Agent, Skill
from capabilities.selectors import skill_for_tenant, skill_versions, skills_for_tenant
from capabilities.services.skills import (
    SkillRejected,
    skill_check,
    skill_delete,
    skill_export,
    skill_import_bundle,
    skill_restore_version,
    skill_save,
    skill_set_enabled,
)

TAGS = ["registry"]
ERRORS = {
    code: OpenApiResponse(ErrorSerializer, description=why)
    for code, why in (
        ("401", "no or bad key"),
        ("404", "no such skill (or another tenant's)"),
        ("413", "body too large"),
        ("422", "the skill breaks a rule: details.errors has line, field and message; nothing saved"),
    )
}


class ZipParser(BaseParser):
    """A raw ``application/zip`` body, read as one uploaded file."""

    media_type = "application/zip"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> dict[str, Any]:
        return {"files": [ContentFile(stream.read() if stream is not None else b"", name="upload.zip")]}


class SkillView(RegistryAPIView):
    def skill(self, request: Request, skill_id: str) -> Skill:
        return skill_or_404(self.tenant(request).pk, skill_id)


def saved_body(skill: Skill) -> dict[str, Any]:
    refreshed = skill_for_tenant(skill.tenant_id, skill.skill_id)
    assert refreshed is not None
    return skill_body(refreshed)


class SkillListView(SkillView):
    @extend_schema(
        tags=TAGS,
        operation_id="skills_list",
        summary="The tenant's skills",
        responses={200: page_of(SkillSerializer), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, skills_for_tenant(self.tenant(request).pk), skill_body)

    @extend_schema(
        tags=TAGS,
        operation_id="skills_create",
        summary="Create a skill from Markdown",
        request=SkillSourceSerializer,
        responses={201: SkillSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = SkillSourceSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        body = data.validated_data
        try:
            saved = skill_save(
                tenant_id=self.tenant(request).pk,
                source=body["source"],
                create_only=True,
                note=body.get("note", ""),
            )
        except SkillRejected as exc:
            raise skill_refusal(exc) from exc
        if "enabled" in body and body["enabled"] != saved.skill.enabled:
            skill_set_enabled(skill=saved.skill, enabled=body["enabled"])
        return Response(saved_body(saved.skill), status=201)


class SkillDetailView(SkillView):
    @extend_schema(
        tags=TAGS,
        operation_id="skills_retrieve",
        summary="A skill",
        responses={200: SkillSerializer, **ERRORS},
    )
    def get(self, request: Request, skill_id: str) -> Response:
        return Response(skill_body(self.skill(request, skill_id)))

    @extend_schema(
        tags=TAGS,
        operation_id="skills_update",
        summary="Replace a skill's source",
        description="A new version when the source changed (the id must stay); `enabled` switches it.",
        request=SkillSourceSerializer,
        responses={200: SkillSerializer, **ERRORS},
    )
    def put(self, request: Request, skill_id: str) -> Response:
        skill = self.skill(request, skill_id)
        data = SkillSourceSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        body = data.validated_data
        try:
            saved = skill_save(
                tenant_id=self.tenant(request).pk,
                source=body["source"],
                skill=skill,
                note=body.get("note", ""),
            )
        except SkillRejected as exc:
            raise skill_refusal(exc) from exc
        if "enabled" in body and body["enabled"] != saved.skill.enabled:
            skill_set_enabled(skill=saved.skill, enabled=body["enabled"])
        return Response(saved_body(saved.skill))

    @extend_schema(
        tags=TAGS, operation_id="skills_destroy", summary="Delete a skill", responses={204: None, **ERRORS}
    )
    def delete(self, request: Request, skill_id: str) -> Response:
        skill_delete(skill=self.skill(request, skill_id), changed_by=self.principal(request).credential)
        return Response(status=204)


class SkillVersionsView(SkillView):
    @extend_schema(
        tags=TAGS,
        operation_id="skills_versions_list",
        summary="A skill's versions, newest first",
        responses={200: page_of(SkillVersionSerializer), **ERRORS},
    )
    def get(self, request: Request, skill_id: str) -> Response:
        return self.paginate(request, skill_versions(self.skill(request, skill_id)), version_body)


class SkillRestoreView(SkillView):
    @extend_schema(
        tags=TAGS,
        operation_id="skills_versions_restore",
        summary="Make an old version current again",
        description="Saved as a new version (history stays linear); refused like any save if the old "
        "source no longer passes today's rules.",
        request=None,
        responses={200: SkillSerializer, **ERRORS},
    )
    def post(self, request: Request, skill_id: str, number: int) -> Response:
        version = skill_version_or_404(self.skill(request, skill_id), number)
        try:
            saved = skill_restore_version(version=version)
        except SkillRejected as exc:
            raise skill_refusal(exc) from exc
        return Response(saved_body(saved.skill))


class SkillValidateView(SkillView):
    @extend_schema(
        tags=TAGS,
        operation_id="skills_validate",
        summary="Check a skill's source (dry run, nothing saved)",
        request=SkillValidateSerializer,
        responses={200: SkillValidResponse, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = SkillValidateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        source = data.validated_data["source"]
        try:
            spec = skill_check(tenant_id=self.tenant(request).pk, source=source)
        except SkillRejected as exc:
            raise skill_refusal(exc) from exc
        return Response({"valid": True, "parsed": SkillParsedSerializer(spec).data})


class SkillImportView(SkillView):
    parser_classes = [MultiPartParser, ZipParser]

    def max_body_bytes(self) -> int:
        return settings.AGUI_SKILL_IMPORT_MAX_BYTES

    @extend_schema(
        tags=TAGS,
        operation_id="skills_import",
        summary="Import .md files or a .zip of them, all or nothing",
        request={"multipart/form-data": SkillImportUpload, "application/zip": OpenApiTypes.BINARY},
        parameters=[OpenApiParameter("agent", str, description="attach the skills to this agent (zip body)")],
        responses={200: SkillImportResponse, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        agent: Agent | None = None
        tenant = self.tenant(request)
        form = request.data
        assert isinstance(
            form, dict
        )  # multipart's QueryDict or ZipParser's dict: no parser here makes a list
        slug = form.get("agent") or request.query_params.get("agent")
        if slug:
            agent = tenant_agent_or_404(tenant.pk, str(slug))
        uploads = multipart_files(request, form) if isinstance(form, MultiValueDict) else form["files"]
        try:
            resources: dict[str, str] = {}
            files, skipped = read_bundle(list(uploads), resources=resources)
            saved = skill_import_bundle(
                tenant_id=tenant.pk,
                files=files,
                agent=agent,
                resources=resources,
                changed_by=self.principal(request).credential,
            )
        except BundleUnreadable as exc:
            raise bundle_refusal(exc) from exc
        except SkillRejected as exc:
            raise skill_refusal(exc) from exc
        items = [{"id": s.skill.skill_id, "version": s.version, "changed": s.changed} for s in saved]
        return Response({"items": items, "skipped": skipped})


class SkillExportView(SkillView):
    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        return super().perform_content_negotiation(request, force=True)  # errors stay JSON

    @extend_schema(
        tags=TAGS,
        operation_id="skills_export",
        summary="Every skill as <id>.md in a zip (importing it changes nothing)",
        responses={(200, "application/zip"): OpenApiTypes.BINARY, **ERRORS},
    )
    def get(self, request: Request) -> HttpResponse:
        buffer = io.BytesIO()
        tenant = self.tenant(request)
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, source in skill_export(tenant_id=tenant.pk).items():
                archive.writestr(name, source)
        response = HttpResponse(buffer.getvalue(), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="skills-{tenant.slug}.zip"'
        return response


def multipart_files(request: Request, form: MultiValueDict[str, Any]) -> list[Any]:
    """The ``files`` parts of a multipart import (``form``: its ``request.data``); a ``files`` part
    sent as text is a 422."""
    if any(isinstance(value, str) for value in form.getlist("files")):
        raise Unprocessable(
            "`files` must be file parts (.md or .zip files), not text fields.",
            code="invalid_body",
            details={"fields": [{"field": "files", "message": "must be file parts"}]},
        )
    return request.FILES.getlist("files")
