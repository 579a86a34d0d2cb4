"""``GET /docs/…`` serves the built docs site (mkdocs' ``site/``) and nothing outside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client


@pytest.fixture
def site(tmp_path: Path, settings) -> Path:
    root = tmp_path / "site"
    (root / "guides" / "browser").mkdir(parents=True)
    (root / "index.html").write_text("<h1>AG-UI Hub docs</h1>")
    (root / "guides" / "browser" / "index.html").write_text("<h1>Browser apps</h1>")
    (tmp_path / "secret.txt").write_text("not for you")
    settings.AGUI_DOCS_SITE_DIR = root
    return root


def test_it_serves_the_site_index_and_a_page(site: Path) -> None:
    client = Client()
    assert b"AG-UI Hub docs" in b"".join(client.get("/docs/").streaming_content)
    assert b"Browser apps" in b"".join(client.get("/docs/guides/browser/").streaming_content)


def test_a_page_without_its_slash_redirects_and_docs_goes_to_docs_slash(site: Path) -> None:
    client = Client()
    assert client.get("/docs/guides/browser")["Location"] == "/docs/guides/browser/"
    assert client.get("/docs")["Location"] == "/docs/"


def test_it_serves_nothing_outside_the_site(site: Path) -> None:
    client = Client()
    for path in ("/docs/../secret.txt", "/docs/%2e%2e/secret.txt", "/docs/missing.html"):
        response = client.get(path)
        assert response.status_code in (400, 404), path
        assert b"not for you" not in (
            b"".join(response.streaming_content) if response.streaming else response.content
        )


def test_a_site_not_built_is_a_404_saying_how_to_build_it(tmp_path: Path, settings) -> None:
    settings.AGUI_DOCS_SITE_DIR = tmp_path / "nothing"
    response = Client().get("/docs/")
    assert response.status_code == 404 and b"mkdocs build" in response.content


def test_it_answers_get_only(site: Path) -> None:
    assert Client().post("/docs/").status_code == 405


def test_the_playground_and_the_api_docs_link_to_the_docs(site: Path, settings) -> None:
    assert b'href="/docs/"' in Client().get("/").content
    assert "(/docs/)" in settings.SPECTACULAR_SETTINGS["DESCRIPTION"]
