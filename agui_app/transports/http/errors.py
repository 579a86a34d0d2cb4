"""Errors as HTTP answers: ``ApiError`` as a JSON response, and DRF's exceptions in the same shape."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from agui_app.errors import ApiError, TooManyRequests
from agui_app.logs import request_refused


def error_response(error: ApiError, request: HttpRequest | None = None) -> JsonResponse:
    if request is not None:
        request_refused(status=error.status, code=error.code, method=request.method or "", path=request.path)
    response = JsonResponse(error.payload(), status=error.status)
    if error.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    if isinstance(error, TooManyRequests):
        response["Retry-After"] = str(error.retry_after)
    return response


_DRF_CODES = {
    drf_exceptions.ParseError: ("malformed_json", 400),
    drf_exceptions.NotAuthenticated: ("unauthenticated", 401),
    drf_exceptions.AuthenticationFailed: ("unauthenticated", 401),
    drf_exceptions.PermissionDenied: ("not_found", 404),
    drf_exceptions.NotFound: ("not_found", 404),
    drf_exceptions.MethodNotAllowed: ("method_not_allowed", 405),
    drf_exceptions.NotAcceptable: ("not_acceptable", 406),
    drf_exceptions.UnsupportedMediaType: ("unsupported_media_type", 415),
    drf_exceptions.Throttled: ("rate_limited", 429),
    drf_exceptions.ValidationError: ("invalid", 422),
}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, answering in our error shape. Permission errors read as 404 (no oracle)."""
    request = context.get("request")
    if isinstance(exc, ApiError):
        if request is not None:
            request_refused(status=exc.status, code=exc.code, method=request.method, path=request.path)
        response = Response(exc.payload(), status=exc.status)
        if exc.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="api"'
        if isinstance(exc, TooManyRequests):
            response["Retry-After"] = str(exc.retry_after)
        return response
    response = exception_handler(exc, context)
    if response is None:
        return None
    code, status = "error", response.status_code
    for exc_type, (mapped_code, mapped_status) in _DRF_CODES.items():
        if isinstance(exc, exc_type):
            code, status = mapped_code, mapped_status
            break
    if status == 404:
        message, details = "Not found.", {}
    elif isinstance(exc, drf_exceptions.ValidationError):
        message, details = "The request is invalid.", {"fields": response.data}
    elif isinstance(exc, drf_exceptions.Throttled):
        wait = int(exc.wait or 1)
        message, details = f"Too many requests; retry in {wait} s.", {"retryAfter": wait}
    else:
        detail = response.data.get("detail", "") if isinstance(response.data, dict) else response.data
        message, details = str(detail), {}
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    response.data = {"error": body}
    response.status_code = status
    if request is not None:
        request_refused(status=status, code=code, method=request.method, path=request.path)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response
