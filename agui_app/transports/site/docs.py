"""``GET /docs/…``: the documentation site (``mkdocs build``'s ``site/``), served by the hub itself.

A checkout serves the ``site/`` the last ``mkdocs build`` wrote; an installed wheel serves the copy it was
built with (``project/bundled/site``). Not built: a 404 page saying how to build it. Static files only,
read through Django's ``static.serve`` (its ``safe_join`` keeps a path inside the folder).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase, HttpResponseNotFound, HttpResponseRedirect
from django.views.decorators.http import require_safe
from django.views.static import serve

NOT_BUILT = (
    "<!doctype html><meta charset='utf-8'><title>Docs not built</title>"
    "<h1>The documentation site is not built</h1>"
    "<p>Build it with <code>.venv/bin/pip install -r requirements-docs.txt</code> then "
    "<code>.venv/bin/mkdocs build</code>; the hub serves it here. The pages are Markdown under "
    "<code>docs/</code> in the repository. The API's reference: <a href='/api/docs'>/api/docs</a>.</p>"
)


@require_safe
def docs_site(request: HttpRequest, path: str = "") -> HttpResponseBase:
    root = Path(settings.AGUI_DOCS_SITE_DIR)
    if not (root / "index.html").is_file():
        return HttpResponseNotFound(NOT_BUILT)
    if path and not path.endswith("/") and (root / path).is_dir():
        return HttpResponseRedirect(f"{request.path}/")  # relative links of a page need the slash
    if path == "" or path.endswith("/"):
        path = f"{path}index.html"
    return serve(request, path, document_root=str(root))
