"""Errors as HTTP answers: ``ApiError`` as a JSON response, and DRF's exceptions in the same shape."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from agui_app.errors import ApiError, NotFound, TooManyRequests
from agui_app.logs import request_refused

logger = logging.getLogger(__name__)


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


# --- every error under /api/ is JSON ---------------------------------------------------------


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """The last URL pattern under ``api/``: an unknown path is a JSON 404, not Django's HTML page."""
    return error_response(NotFound("No such endpoint.", details={"path": request.path[:200]}))


class ApiErrorMiddleware:
    """An exception a view under ``/api/`` did not handle becomes a JSON error (500 unless it is one
    Django maps to 400/404), logged, never a traceback page — with ``DEBUG`` on or off."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[..., Any]) -> None:
        self.get_response = get_response
        from asgiref.sync import iscoroutinefunction, markcoroutinefunction

        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api(request):
            return None
        if isinstance(exception, ApiError):
            return error_response(exception)
        if isinstance(exception, Http404 | PermissionDenied):
            return error_response(NotFound("Not found."))
        if isinstance(exception, SuspiciousOperation):
            return error_response(ApiError("The request is malformed.", code="bad_request"))
        logger.error("%s %s failed", request.method, request.path, exc_info=exception)
        return error_response(ApiError("Internal error.", code="internal_error", status=500))


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return api_not_found(request)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if is_api(request):
        return error_response(ApiError("Internal error.", code="internal_error", status=500))
    from django.views.defaults import server_error

    return server_error(request)
