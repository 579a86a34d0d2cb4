"""End-user tokens: minted by a tenant's backend for one of its users, used by browsers.

A token is a JWT (PyJWT, HS256) that a server checks with no database query: its signature, its
expiry, and two cached facts — the tenant's signing key and the user's "not before".

- ``kid`` (header) and ``iss`` name the tenant; ``aud`` is ``agui-hub``; ``sub`` is the user id the
  tenant chose; ``scope`` (space separated), and optionally ``agents`` and ``threads``, limit it.
- The signing key is ``HMAC(SECRET_KEY, "<tenant pk>:<tenant.token_salt>")``: the database holds no
  usable secret. Rotating the salt (``token_secret_rotate``) revokes every token of the tenant at once.
- ``tokens_revoke_user`` records a "not before" for one user: their tokens issued until then are
  refused, the ones minted afterwards work (``iat`` carries milliseconds, as RFC 7519 allows).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac

from agui_app.access import TOKEN_SCOPES, Principal
from agui_app.errors import Unauthenticated
from agui_app.models import Tenant, TokenRevocation
from agui_app.services.tenancy import tenant_cached, tenant_changed

ALGORITHM = "HS256"
AUDIENCE = "agui-hub"
LEEWAY_SECONDS = 5
_NOT_BEFORE_KEY = "token-nbf:v1:{tenant}:{user}"


class TokenExpired(Unauthenticated):
    code = "token_expired"


@dataclass(frozen=True)
class MintedToken:
    token: str
    expires_at: datetime


def signing_key(tenant: Tenant) -> bytes:
    return salted_hmac(
        "agui.user-tokens", f"{tenant.pk}:{tenant.token_salt}", secret=settings.SECRET_KEY, algorithm="sha256"
    ).digest()


def token_mint(
    *,
    tenant: Tenant,
    user: str,
    ttl_seconds: int,
    scopes: Sequence[str] | None = None,
    agents: Sequence[str] | None = None,
    threads: Sequence[str] | None = None,
) -> MintedToken:
    """Sign a token for ``user`` of ``tenant`` (inputs validated by the caller). Writes nothing."""
    now = datetime.now(UTC)
    expires_at = now.replace(microsecond=0) + timedelta(seconds=ttl_seconds)
    claims: dict[str, object] = {
        "iss": tenant.slug,
        "aud": AUDIENCE,
        "sub": user,
        "iat": round(now.timestamp(), 3),
        "exp": int(expires_at.timestamp()),
        "jti": secrets.token_urlsafe(12),
        "scope": " ".join(scopes if scopes is not None else TOKEN_SCOPES),
    }
    if agents is not None:
        claims["agents"] = list(agents)
    if threads is not None:
        claims["threads"] = list(threads)
    token = jwt.encode(claims, signing_key(tenant), algorithm=ALGORITHM, headers={"kid": tenant.slug})
    return MintedToken(token=token, expires_at=expires_at)


def looks_like_token(raw: str) -> bool:
    return raw.count(".") == 2 and raw.startswith("ey")


def token_principal(raw: str) -> Principal | None:
    """The principal of a valid token, or ``None`` (bad signature, unknown tenant, revoked, malformed).

    Raises:
        TokenExpired: a genuine token past its expiry (401 ``token_expired``: mint a new one).
    """
    try:
        kid = jwt.get_unverified_header(raw).get("kid")
    except jwt.InvalidTokenError:
        return None
    if not isinstance(kid, str) or not kid:
        return None
    tenant = tenant_cached(kid)
    if tenant is None:
        return None
    try:
        claims = jwt.decode(
            raw,
            signing_key(tenant),
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            issuer=tenant.slug,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "sub", "aud", "iss"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise TokenExpired("The token has expired; ask your backend for a new one.") from exc
    except jwt.InvalidTokenError:
        return None
    user, scope = claims["sub"], claims.get("scope", "")
    agents, threads = claims.get("agents"), claims.get("threads")
    if not (isinstance(user, str) and user and isinstance(scope, str)):
        return None
    if not all(
        isinstance(v, list) and all(isinstance(i, str) for i in v) for v in (agents or [], threads or [])
    ):
        return None
    if float(claims["iat"]) <= user_not_before(tenant.pk, user):
        return None
    return Principal.for_user(
        tenant,
        user=user,
        scopes=scope.split(),
        agents=agents,
        threads=threads,
        expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
    )


def user_not_before(tenant_pk: int, user: str) -> float:
    """The user's "not before" (epoch seconds; 0: none), cached — absent ones too — for as long as a
    token can live, so a token check stays off the database."""
    key = _NOT_BEFORE_KEY.format(tenant=tenant_pk, user=user)
    value = cache.get(key)
    if value is None:
        moment = (
            TokenRevocation.objects.filter(tenant_id=tenant_pk, user=user)
            .values_list("not_before", flat=True)
            .first()
        )
        value = moment.timestamp() if moment is not None else 0.0
        cache.set(key, value, timeout=settings.AGUI_TOKEN_MAX_TTL_SECONDS + LEEWAY_SECONDS)
    return float(value)


def tokens_revoke_user(*, tenant: Tenant, user: str) -> datetime:
    """Refuse every token of ``user`` issued up to now. Returns the "not before"."""
    not_before = timezone.now()
    key = _NOT_BEFORE_KEY.format(tenant=tenant.pk, user=user)
    ttl = settings.AGUI_TOKEN_MAX_TTL_SECONDS + LEEWAY_SECONDS
    with transaction.atomic():
        TokenRevocation.objects.update_or_create(
            tenant=tenant, user=user, defaults={"not_before": not_before}
        )
        transaction.on_commit(lambda: cache.set(key, not_before.timestamp(), ttl))
    return not_before


def token_secret_rotate(*, tenant: Tenant) -> datetime:
    """A new signing key for the tenant: every token minted before stops working at once."""
    with transaction.atomic():
        locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
        locked.token_salt = secrets.token_urlsafe(32)
        locked.tokens_rotated_at = timezone.now()
        locked.save(update_fields=["token_salt", "tokens_rotated_at"])
        tenant_changed(locked)
    tenant.token_salt, tenant.tokens_rotated_at = locked.token_salt, locked.tokens_rotated_at
    return locked.tokens_rotated_at
