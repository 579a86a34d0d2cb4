"""``manage.py`` works in a checkout ``scripts/serve.sh`` set up, with nothing exported: settings read
the git-ignored ``.env`` it writes (python-dotenv), and a variable that is set wins over the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOW = "from django.conf import settings; print(settings.SECRET_KEY, settings.AGUI_DEFAULT_MODEL)"


def manage(*args: str, env_file: Path | None, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE"}
    }
    clean |= {"AGUI_ENV_FILE": str(env_file) if env_file else "/nonexistent/.env", **env}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def test_without_the_file_a_command_says_what_is_missing(tmp_path: Path) -> None:
    result = manage("check", env_file=None)
    assert result.returncode != 0
    assert "SECRET_KEY is required when DEBUG is off" in result.stderr


def test_with_the_file_commands_run_without_exporting_anything(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("SECRET_KEY=from-the-dot-env-file\nAGUI_DEFAULT_MODEL=demo\n")
    result = manage("shell", "-v", "0", "-c", SHOW, env_file=env_file)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["from-the-dot-env-file", "demo"]
    assert manage("createsuperuser", "--help", env_file=env_file).returncode == 0


def test_a_variable_that_is_set_wins_over_the_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("SECRET_KEY=from-the-dot-env-file\n")
    result = manage("shell", "-v", "0", "-c", SHOW, env_file=env_file, SECRET_KEY="exported")
    assert result.stdout.split()[0] == "exported"


def test_the_file_is_ignored_by_git() -> None:
    assert ".env" in (ROOT / ".gitignore").read_text().split()


DEPLOY = {
    "SECRET_KEY": "deploy-check-" + "k" * 50,
    "ALLOWED_HOSTS": "hub.example.com",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SESSION_COOKIE_SECURE": "1",
    "CSRF_COOKIE_SECURE": "1",
}


def test_check_deploy_fails_on_warnings_unless_the_documented_https_settings_are_set() -> None:
    """What ``scripts/serve-prod.sh`` runs: without the HTTPS settings each missing one is a warning
    that stops it; with the README's environment it is clean; a silenced check is not reported."""
    check = ("check", "--deploy", "--fail-level", "WARNING")
    bare = manage(*check, env_file=None, SECRET_KEY=DEPLOY["SECRET_KEY"], ALLOWED_HOSTS="hub.example.com")
    assert bare.returncode != 0
    for code in ("W004", "W008", "W012", "W016"):
        assert f"security.{code}" in bare.stderr
    clean = manage(*check, env_file=None, **DEPLOY)
    assert clean.returncode == 0, clean.stderr
    no_preload = manage(*check, env_file=None, **(DEPLOY | {"SECURE_HSTS_PRELOAD": "0"}))
    assert no_preload.returncode != 0 and "security.W021" in no_preload.stderr
    silenced = {"SECURE_HSTS_PRELOAD": "0", "SILENCED_SYSTEM_CHECKS": "security.W021"}
    assert manage(*check, env_file=None, **(DEPLOY | silenced)).returncode == 0
