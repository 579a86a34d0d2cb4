"""REST views of long-term memory (docs/design.md §20): thin, over ``selectors.memory*`` and
``services.memory``.

Who reaches what: tenant keys (``runtime`` or ``admin``) every namespace of the tenant; a user token
only ``users/<its user>`` and below (anything else is a 404). Reading needs ``threads:read``, writing
``state:write``; one user's export and erasure (``/memory?user=``) need an ``admin`` key — or a user
token, for its own user. Setting a namespace's TTL needs an ``admin`` key.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Principal, Scope
from agui_app.errors import PayloadTooLarge, Unprocessable, not_found
from agui_app.selectors.memory import (
    memory_item_or_404,
    memory_items,
    namespace_ttl_source,
    reachable_namespace,
    user_memory,
    user_namespace,
)
from agui_app.selectors.memory_search import memory_search
from agui_app.services.memory import (
    embed_document,
    embed_query,
    memory_delete,
    memory_erase_user,
    memory_put,
    memory_ttl_set,
    text_of,
)
from agui_app.transports.edge.auth import insufficient_scope
from agui_app.transports.inputs import ID_PATTERN
from agui_app.transports.rest.base import PAGE, ErrorSerializer, TenantAPIView, page_of
from agui_app.transports.rest.memory import bodies as io

TAGS = ["memory"]
NAMESPACE = OpenApiParameter(
    "namespace", str, OpenApiParameter.PATH, description="e.g. users/alice (slashes included)"
)
ERRORS = {
    "404": OpenApiResponse(ErrorSerializer, description="no such item, or a namespace you do not reach"),
    "422": OpenApiResponse(ErrorSerializer, description="a malformed namespace, key or field"),
}
BODY_SLACK_BYTES = 8192  # the JSON around a value and its text


class MemoryAPIView(TenantAPIView):
    """Bodies up to about twice the item limit (the exact limit is the service's: 413)."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authenticates first: a stranger learns nothing
        length = request.META.get("CONTENT_LENGTH") or ""
        limit = 2 * settings.AGUI_MEMORY_MAX_ITEM_BYTES + BODY_SLACK_BYTES
        if length.isascii() and length.isdigit() and int(length) > limit:
            raise PayloadTooLarge(f"The body is larger than {limit} bytes.", details={"limit": limit})

    def namespace(self, request: Request, namespace: str) -> str:
        return reachable_namespace(self.principal(request), namespace)


def writer(principal: Principal) -> str:
    """The end user a write is recorded for (a user token's; a key writes as the tenant)."""
    return principal.user or ""


class MemoryItemView(MemoryAPIView):
    required_scopes = {"GET": Scope.THREADS_READ, "PUT": Scope.STATE_WRITE, "DELETE": Scope.STATE_WRITE}

    @extend_schema(
        operation_id="memory_item_retrieve",
        tags=TAGS,
        parameters=[NAMESPACE],
        responses={200: io.MemoryItemBody, **ERRORS},
    )
    def get(self, request: Request, namespace: str, key: str) -> Response:
        principal = self.principal(request)
        item = memory_item_or_404(principal.tenant, self.namespace(request, namespace), key)
        return Response(io.item_body(item))

    @extend_schema(
        operation_id="memory_item_put",
        tags=TAGS,
        parameters=[NAMESPACE],
        request=io.MemoryPutInput,
        responses={200: io.MemoryItemBody, 201: io.MemoryItemBody, **ERRORS},
    )
    def put(self, request: Request, namespace: str, key: str) -> Response:
        """Create (201) or replace (200) the item; the same key written at once by several clients ends
        as one item, the last write's."""
        principal = self.principal(request)
        namespace = self.namespace(request, namespace)
        data = io.MemoryPutInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        text = values.get("text")
        written = memory_put(
            tenant=principal.tenant,
            namespace=namespace,
            key=key,
            value=values["value"],
            text=text,
            ttl_seconds=values.get("ttlSeconds"),
            user=writer(principal),
            vector=embed_document(text if text is not None else text_of(values["value"])),
        )
        return Response(io.item_body(written.item), status=201 if written.created else 200)

    @extend_schema(
        operation_id="memory_item_delete",
        tags=TAGS,
        parameters=[NAMESPACE],
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, namespace: str, key: str) -> Response:
        principal = self.principal(request)
        if not memory_delete(tenant=principal.tenant, namespace=self.namespace(request, namespace), key=key):
            raise not_found("Memory item")
        return Response(status=204)


class MemoryItemListView(MemoryAPIView):
    @extend_schema(
        operation_id="memory_items_list",
        tags=TAGS,
        parameters=[
            NAMESPACE,
            OpenApiParameter(
                "prefix", str, description="only keys starting with this (at most 128 characters)"
            ),
            *PAGE,
        ],
        responses={200: page_of(io.MemoryItemBody), **ERRORS},
    )
    def get(self, request: Request, namespace: str) -> Response:
        """The live items of one namespace (not those below it), by key."""
        principal = self.principal(request)
        prefix = request.query_params.get("prefix", "")[:128]
        items = memory_items(principal.tenant, self.namespace(request, namespace), key_prefix=prefix)
        return self.paginate(request, items, io.item_body)


class MemorySearchView(MemoryAPIView):
    required_scopes = {"POST": Scope.THREADS_READ}

    @extend_schema(
        operation_id="memory_search",
        tags=TAGS,
        request=io.MemorySearchInput,
        responses={200: io.MemorySearchBody, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Ranked search: full-text on the query's words, plus vector similarity when an embedding model
        is configured; ``score`` 0-1, best first."""
        principal = self.principal(request)
        data = io.MemorySearchInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        prefix = values.get("namespace") or ""
        if prefix:
            prefix = self.namespace(request, prefix)
        elif principal.user is not None:
            prefix = user_namespace(principal.user)
        vector = embed_query(values["query"])
        hits = memory_search(
            tenant=principal.tenant,
            prefix=prefix,
            query=values["query"],
            limit=values["limit"],
            filters=values["filter"],
            vector=vector.values if vector else None,
            model=vector.model if vector else "",
        )
        return Response({"items": [io.hit_body(hit) for hit in hits]})


USER = OpenApiParameter(
    "user", str, description="the end user (tenant keys: required; a user token: its own, or absent)"
)


class MemoryUserView(MemoryAPIView):
    """One end user's memory: everything in ``users/<user>`` (and below) and everything they wrote."""

    required_scopes = {"GET": Scope.THREADS_READ, "DELETE": Scope.STATE_WRITE}

    def user(self, request: Request) -> str:
        principal = self.principal(request)
        asked = request.query_params.get("user")
        if principal.user is not None:
            if asked not in (None, principal.user):
                raise not_found("User")
            return principal.user
        if not principal.has(Scope.ADMIN):
            raise insufficient_scope(principal, Scope.ADMIN)
        if not asked or not ID_PATTERN.match(asked):
            raise Unprocessable(
                "Name the end user: ?user=<id> (1-128 of A-Z a-z 0-9 . _ : @ -).",
                details={"fields": {"user": ["required, an end user id"]}},
            )
        return asked

    @extend_schema(
        operation_id="memory_user_export",
        tags=TAGS,
        parameters=[USER, *PAGE],
        responses={200: page_of(io.MemoryItemBody), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Export: every item of the user's (expired ones too, until purged), by namespace and key."""
        user = self.user(request)
        return self.paginate(request, user_memory(self.principal(request).tenant, user), io.item_body)

    @extend_schema(
        operation_id="memory_user_erase",
        tags=TAGS,
        parameters=[USER],
        responses={200: io.MemoryErasedBody, **ERRORS},
    )
    def delete(self, request: Request) -> Response:
        """Erase: delete every item of the user's, in one transaction."""
        user = self.user(request)
        deleted = memory_erase_user(tenant=self.principal(request).tenant, user=user)
        return Response({"user": user, "deleted": deleted})


class MemoryTtlView(MemoryAPIView):
    required_scopes = {"GET": Scope.TENANT, "PUT": Scope.ADMIN}

    def body(self, tenant_id: int, namespace: str) -> dict[str, Any]:
        ttl, source = namespace_ttl_source(tenant_id, namespace)
        return {"namespace": namespace, "ttlSeconds": ttl, "appliesFrom": source}

    @extend_schema(
        operation_id="memory_ttl_retrieve",
        tags=TAGS,
        parameters=[NAMESPACE],
        responses={200: io.MemoryTtlBody, **ERRORS},
    )
    def get(self, request: Request, namespace: str) -> Response:
        """The TTL items written in this namespace get (its own, or the nearest namespace above's)."""
        namespace = self.namespace(request, namespace)
        return Response(self.body(self.principal(request).tenant.pk, namespace))

    @extend_schema(
        operation_id="memory_ttl_put",
        tags=TAGS,
        parameters=[NAMESPACE],
        request=io.MemoryTtlInput,
        responses={200: io.MemoryTtlBody, **ERRORS},
    )
    def put(self, request: Request, namespace: str) -> Response:
        """Set the TTL of the namespace and those below it (``null`` removes it); items written from
        now on expire that long after their write."""
        tenant = self.principal(request).tenant
        namespace = self.namespace(request, namespace)
        data = io.MemoryTtlInput(data=request.data)
        data.is_valid(raise_exception=True)
        memory_ttl_set(tenant=tenant, namespace=namespace, ttl_seconds=data.validated_data["ttlSeconds"])
        return Response(self.body(tenant.pk, namespace))
