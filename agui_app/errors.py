"""The errors services raise for rule violations, and their wire shape:
``{"error": {"code", "message", "details"}}`` (transports answer them before any stream opens)."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error a view answers with; services raise these for rule violations."""

    status = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.code
        self.status = status or self.status
        self.details = details or {}

    def payload(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"error": body}


class NotFound(ApiError):
    """Missing, or another tenant's: the two are indistinguishable on purpose."""

    status = 404
    code = "not_found"


class Conflict(ApiError):
    status = 409
    code = "conflict"


class AmbiguousThread(Conflict):
    """A staff user of several tenants named a thread id that more than one of them has."""

    code = "ambiguous_thread"


class PreconditionFailed(ApiError):
    status = 412
    code = "precondition_failed"


class Unprocessable(ApiError):
    status = 422
    code = "invalid"


class TooManyRequests(ApiError):
    """A tenant over a limit; ``retry_after`` seconds is a hint for the ``Retry-After`` header."""

    status = 429
    code = "rate_limited"
    retry_after = 1


class Forbidden(ApiError):
    """Authenticated, but the credential may not do this (its scopes, its origin)."""

    status = 403
    code = "insufficient_scope"


class Unauthenticated(ApiError):
    status = 401
    code = "unauthenticated"


def not_found(what: str) -> NotFound:
    return NotFound(f"{what} not found.")


def disallowed_host() -> ApiError:
    """A request whose ``Host`` header is not in ``ALLOWED_HOSTS`` (the value is not echoed)."""
    return ApiError("The Host header is not allowed (ALLOWED_HOSTS).", code="disallowed_host")


class MethodNotAllowed(ApiError):
    """The path exists, the method does not: its answer names the allowed ones (``Allow``)."""

    status = 405
    code = "method_not_allowed"

    def __init__(self, allowed: list[str] | tuple[str, ...]) -> None:
        super().__init__(f"Use {' or '.join(allowed)}.", details={"allowed": list(allowed)})
        self.allowed = tuple(allowed)


class PayloadTooLarge(ApiError):
    status = 413
    code = "payload_too_large"
