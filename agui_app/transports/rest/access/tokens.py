"""End-user tokens: ``POST /api/v1/tokens`` (mint) and ``POST /api/v1/tokens/revoke`` (a user's
"not before"), for the tenant's backend — API keys only, never a token."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.services.tokens import token_mint, tokens_revoke_user
from agui_app.transports.outputs import iso
from agui_app.transports.rest.access import serializers as io
from agui_app.transports.rest.base import TenantAPIView

ERRORS = {code: io.ErrorBody for code in (400, 401, 403, 422, 429)}


class TokenView(TenantAPIView):
    required_scopes = {"POST": Scope.TENANT}

    @extend_schema(request=io.TokenInput, responses={201: io.TokenOutput, **ERRORS}, tags=["tokens"])
    def post(self, request: Request) -> Response:
        """Mint a short-lived token for one of your users (a Bearer credential for HTTP, SSE and the
        WebSocket's ``auth`` frame). It reaches only that user's threads, and only the agents,
        threads and scopes it names."""
        data = io.TokenInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        minted = token_mint(
            tenant=self.principal(request).tenant,
            user=values["user"],
            ttl_seconds=values["ttlSeconds"],
            scopes=list(dict.fromkeys(values["scopes"])) if "scopes" in values else None,
            agents=list(dict.fromkeys(values["agents"])) if "agents" in values else None,
            threads=list(dict.fromkeys(values["threads"])) if "threads" in values else None,
        )
        return Response({"token": minted.token, "expiresAt": iso(minted.expires_at)}, status=201)


class TokenRevokeView(TenantAPIView):
    required_scopes = {"POST": Scope.TENANT}

    @extend_schema(request=io.UserInput, responses={200: io.RevokedOutput, **ERRORS}, tags=["tokens"])
    def post(self, request: Request) -> Response:
        """Refuse every token of ``user`` minted until now (tokens minted afterwards work)."""
        data = io.UserInput(data=request.data)
        data.is_valid(raise_exception=True)
        user = data.validated_data["user"]
        not_before = tokens_revoke_user(tenant=self.principal(request).tenant, user=user)
        return Response({"user": user, "notBefore": iso(not_before)})
