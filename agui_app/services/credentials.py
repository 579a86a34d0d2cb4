"""A bearer credential — an API key or a user token — to the principal it stands for."""

from __future__ import annotations

from agui_app.access import Principal
from agui_app.services.keys import key_principal
from agui_app.services.tokens import looks_like_token, token_principal

MAX_CREDENTIAL_CHARS = 8192


def principal_for(raw: str | None) -> Principal | None:
    """The principal of a key or token, or ``None``. Raises ``TokenExpired`` for an expired token.
    Reads the database (a key) or the cache (a token's tenant): ``runtime.warm`` keeps the answer."""
    if not raw or len(raw) > MAX_CREDENTIAL_CHARS:
        return None
    return token_principal(raw) if looks_like_token(raw) else key_principal(raw)
