"""The one place an error becomes an answer: an ``ApiError`` (or one of DRF's or Django's) turned
into the JSON body ``{"error": {"code", "message", "details"}}`` with its status and headers, on
every way out — a Django view, a DRF view, an ASGI app answering by itself (the request guard, the
SSE consumers) and a WebSocket (an ``error`` frame, or a refused handshake).

Every refusal is logged once, here (``logs.request_refused``: method, path, status and code; never the
query, a header or the body). The headers a refusal carries are decided once (``error_headers``):
``WWW-Authenticate`` on 401, ``Retry-After`` on 429, ``Allow`` on 405, and the security headers
Django's middleware would add.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import DisallowedHost, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from agui_app.errors import ApiError, MethodNotAllowed, NotFound, TooManyRequests, disallowed_host
from agui_app.logs import request_refused

logger = logging.getLogger(__name__)

Headers = list[tuple[bytes, bytes]]
BEARER_CHALLENGE = 'Bearer realm="api"'


def error_headers(error: ApiError) -> list[tuple[str, str]]:
    """The headers that go with ``error``'s status (besides the content type)."""
    headers: list[tuple[str, str]] = []
    if error.status == 401:
        headers.append(("WWW-Authenticate", BEARER_CHALLENGE))
    if isinstance(error, TooManyRequests):
        headers.append(("Retry-After", str(error.retry_after)))
    if isinstance(error, MethodNotAllowed):
        headers.append(("Allow", ", ".join(error.allowed)))
    return headers


def security_headers() -> Headers:
    """What Django's security and clickjacking middleware add to every response, from the same
    settings: the streaming consumers and the guard answer outside Django's middleware."""
    headers: Headers = [(b"x-frame-options", settings.X_FRAME_OPTIONS.encode())]
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"x-content-type-options", b"nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        value = policy if isinstance(policy, str) else ",".join(policy)
        headers.append((b"referrer-policy", value.encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append((b"cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode()))
    return headers


def _refused(error: ApiError, method: str, path: str) -> None:
    request_refused(status=error.status, code=error.code, method=method, path=path)


# --- Django and DRF views ------------------------------------------------------------------------


def error_response(error: ApiError, request: HttpRequest | None = None) -> JsonResponse:
    """``error`` as a Django response (logged when ``request`` is given)."""
    if request is not None:
        _refused(error, request.method or "", request.path)
    response = JsonResponse(error.payload(), status=error.status)
    for name, value in error_headers(error):
        response[name] = value
    return response


_DRF_ERRORS: dict[type[Exception], tuple[str, int]] = {
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


def as_api_error(exc: drf_exceptions.APIException, data: Any) -> ApiError:
    """One of DRF's exceptions (``data``: what DRF's own handler made of it) in our shape.
    Permission errors read as 404: no oracle for what exists."""
    code, status = "error", exc.status_code
    for exc_type, (mapped_code, mapped_status) in _DRF_ERRORS.items():
        if isinstance(exc, exc_type):
            code, status = mapped_code, mapped_status
            break
    details: dict[str, Any] = {}
    if status == 404:
        message = "Not found."
    elif isinstance(exc, drf_exceptions.ValidationError):
        message, details = "The request is invalid.", {"fields": data}
    elif isinstance(exc, drf_exceptions.Throttled):
        wait = int(getattr(exc, "wait", None) or 1)  # drf-stubs does not declare Throttled.wait
        message, details = f"Too many requests; retry in {wait} s.", {"retryAfter": wait}
    else:
        detail = data.get("detail", "") if isinstance(data, dict) else data
        message = str(detail)
    if status == 429:
        limited = TooManyRequests(message, code=code, status=status, details=details)
        limited.retry_after = int(getattr(exc, "wait", None) or 1)
        return limited
    return ApiError(message, code=code, status=status, details=details)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's exception handler (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``), answering in our shape."""
    request = context.get("request")
    if not isinstance(exc, ApiError):
        response = exception_handler(exc, context)
        if response is None:
            return None
        assert isinstance(exc, drf_exceptions.APIException)
        exc = as_api_error(exc, response.data)
    if request is not None:
        _refused(exc, request.method, request.path)
    answer = Response(exc.payload(), status=exc.status)
    for name, value in error_headers(exc):
        if name != "Allow":  # DRF sets Allow itself from the view's methods
            answer[name] = value
    return answer


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
        return error_response(internal_error())


class ApiHostMiddleware(MiddlewareMixin):
    """Outermost: a request under ``/api/`` whose ``Host`` is not in ``ALLOWED_HOSTS`` is the JSON 400
    ``disallowed_host`` the SSE consumers answer too. Django's own answer (``CommonMiddleware`` raising
    ``DisallowedHost``) is an HTML page, or the debug page with ``DEBUG`` on (and the security
    middleware may ask for the host first, to redirect to HTTPS). Logged like Django logs it (``django.security.DisallowedHost``, whose value ``logs.RequestDataFilter`` removes)."""

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        if not is_api(request):
            return None
        try:
            request.get_host()
        except DisallowedHost as exc:
            logging.getLogger("django.security.DisallowedHost").error(
                str(exc), extra={"status_code": 400, "request": request}
            )
            answer = error_response(disallowed_host(), request)
            for name, value in security_headers():  # the middleware that adds them sits inside this one
                answer[name.decode()] = value.decode()
            return answer
        return None


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A ``SuspiciousOperation`` no view handled (raised by a middleware) under ``/api/`` is JSON too."""
    if is_api(request):
        return error_response(ApiError("The request is malformed.", code="bad_request"))
    from django.views.defaults import bad_request

    return bad_request(request, exception)


def internal_error() -> ApiError:
    return ApiError("Internal error.", code="internal_error", status=500)


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return api_not_found(request)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if is_api(request):
        return error_response(internal_error())
    from django.views.defaults import server_error

    return server_error(request)


# --- ASGI: the guard and the SSE consumers answer by themselves ------------------------------


async def send_error(send: Any, error: ApiError, scope: dict[str, Any], *, close: bool = False) -> None:
    """Answer ``error`` on a raw ASGI HTTP exchange (nothing sent yet). ``close``: ask the client to
    close the connection (the guard answers before reading the body)."""
    _refused(error, scope.get("method", ""), scope.get("path", ""))
    body = orjson.dumps(error.payload())
    headers: Headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *security_headers(),
        *((name.lower().encode(), value.encode()) for name, value in error_headers(error)),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# --- WebSocket ---------------------------------------------------------------------------------

DENIAL_EXTENSION = "websocket.http.response"


def error_frame(
    code: str, message: str, *, ref: str | None, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The WebSocket's ``error`` frame (logged as a refusal of the socket's path)."""
    frame: dict[str, Any] = {"type": "error", "code": code, "message": message, "ref": ref}
    if details:
        frame["details"] = details
    return frame


def socket_refused(code: str, path: str) -> None:
    request_refused(status=None, code=code, method="WS", path=path)


async def deny_handshake(scope: dict[str, Any], send: Any, error: ApiError, *, close_code: int) -> None:
    """Refuse a WebSocket handshake with ``error`` as a JSON HTTP answer, through the ASGI "WebSocket
    Denial Response" extension where the server offers it (Uvicorn); a plain close elsewhere."""
    socket_refused(error.code, scope.get("path", ""))
    if DENIAL_EXTENSION not in (scope.get("extensions") or {}):
        await send({"type": "websocket.close", "code": close_code})
        return
    body = orjson.dumps(error.payload())
    await send(
        {
            "type": "websocket.http.response.start",
            "status": error.status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "websocket.http.response.body", "body": body})
