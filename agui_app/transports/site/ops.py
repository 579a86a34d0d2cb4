"""Endpoints for operators and their machines: ``GET /healthz`` (the process answers),
``GET /readyz`` (it can serve: database, migrations, channel layer, not shutting down) and
``GET /metrics`` (Prometheus; ``AGUI_METRICS_TOKEN`` as a bearer token, unset: loopback only).

None of them needs an API key; none says anything about a tenant.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from agui_app import metrics
from agui_app.lifecycle import draining

logger = logging.getLogger(__name__)
CHECK_TIMEOUT_SECONDS = 2.0
_migrations_applied = False  # once true for this process's code, it stays true


@csrf_exempt  # GET only: a POST is a 405 with Allow, not a CSRF 403
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def check_migrations() -> str:
    global _migrations_applied
    if not _migrations_applied:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            return f"{len(pending)} migration(s) not applied"
        _migrations_applied = True
    return "ok"


def check_channel_layer() -> str:
    """A Redis ping per host of a Redis channel layer; the in-memory layer has nothing to reach."""
    layer = settings.CHANNEL_LAYERS.get("default", {})
    if "channels_redis" not in layer.get("BACKEND", ""):
        return "skipped"
    for host in layer.get("CONFIG", {}).get("hosts", []):
        address = host if isinstance(host, str) else host.get("address")
        client = redis.Redis.from_url(
            address, socket_timeout=CHECK_TIMEOUT_SECONDS, socket_connect_timeout=CHECK_TIMEOUT_SECONDS
        )
        try:
            client.ping()
        finally:
            client.close()
    return "ok"


def check_admitting() -> str:
    return "shutting down" if draining() else "ok"


CHECKS: dict[str, Callable[[], str]] = {
    "database": check_database,
    "migrations": check_migrations,
    "channelLayer": check_channel_layer,
    "admitting": check_admitting,
}
FAILED_PREFIXES = ("failed", "shutting down")


@csrf_exempt  # GET only: a POST is a 405 with Allow, not a CSRF 403
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when every check passes, else 503 naming the failing part (``checks``)."""
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except Exception as exc:  # the point is to report it, not to raise it
            logger.warning("readiness check %s failed: %r", name, exc)
            results[name] = f"failed: {type(exc).__name__}"
    ready = all(value in ("ok", "skipped") for value in results.values())
    body = {"status": "ok" if ready else "unavailable", "checks": results}
    response = JsonResponse(body, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = "5"
    return response


def metrics_allowed(request: HttpRequest) -> bool:
    token = settings.AGUI_METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR") or "").is_loopback
    except ValueError:
        return False


@csrf_exempt  # GET only: a POST is a 405 with Allow, not a CSRF 403
@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(request):
        return JsonResponse(
            {
                "error": {
                    "code": "forbidden",
                    "message": "Metrics need AGUI_METRICS_TOKEN or a loopback client.",
                }
            },
            status=403,
        )
    return HttpResponse(metrics.exposition(), content_type=metrics.CONTENT_TYPE)
