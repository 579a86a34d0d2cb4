"""DRF's throttle hook on our limiter (``services.ratelimits``): the same count the streaming
endpoints keep, per key or per end user, at the tenant's requests per minute."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from agui_app.services.ratelimits import RateLimited, count_request


class CredentialRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self.retry_after: int | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        principal = getattr(request.user, "principal", None)
        if principal is None:
            return True
        try:
            count_request(principal)
        except RateLimited as exc:
            self.retry_after = exc.retry_after
            return False
        return True

    def wait(self) -> float | None:
        return self.retry_after
