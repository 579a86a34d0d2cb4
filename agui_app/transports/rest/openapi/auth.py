"""The two bearer credentials of the API in OpenAPI (drf-spectacular registers the extension when
``openapi`` imports this module)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from agui_app.transports.rest.openapi.parts import CREDENTIALS


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """``Authorization: Bearer <credential>``: an API key or a user token (either one)."""

    target_class = "agui_app.transports.edge.auth.ApiKeyAuthentication"
    name = ["apiKey", "userToken"]

    def get_security_requirement(self, auto_schema: Any) -> list[dict[str, list[Any]]]:
        return CREDENTIALS

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, Any]]:
        return [
            {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key, `agui_<prefix>_<secret>` (`manage.py create_api_key`).",
            },
            {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "JWT",
                "description": "A short-lived end-user token (`POST /api/v1/tokens`).",
            },
        ]
