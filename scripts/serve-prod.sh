#!/usr/bin/env bash
# Production launcher: N Uvicorn worker processes on PostgreSQL + Redis (docs/operating/index.md).
#
#   DATABASE_URL=postgres://… REDIS_URL=redis://… SECRET_KEY=… ALLOWED_HOSTS=hub.example.com \
#   SECURE_SSL_REDIRECT=1 SECURE_HSTS_SECONDS=31536000 SECURE_HSTS_INCLUDE_SUBDOMAINS=1 \
#   SECURE_HSTS_PRELOAD=1 SESSION_COOKIE_SECURE=1 CSRF_COOKIE_SECURE=1 scripts/serve-prod.sh
#
# Checks the deployment (manage.py check --deploy: it stops on any warning, so set the HTTPS settings
# of docs/operating/index.md "The launcher" or silence a deliberate exception with SILENCED_SYSTEM_CHECKS), applies migrations, collects static files into
# STATIC_ROOT (serve /static/ from there with your proxy), then runs WEB_CONCURRENCY workers that
# share one port. SIGTERM drains: each worker stops admitting runs, lets active runs finish for
# AGUI_SHUTDOWN_GRACE_SECONDS, interrupts the rest, then exits.
#
# Environment: WEB_CONCURRENCY (3), HOST (127.0.0.1), PORT (8000), FORWARDED_ALLOW_IPS (127.0.0.1:
# the proxies whose X-Forwarded-For/-Proto are trusted), PROMETHEUS_MULTIPROC_DIR (a fresh
# directory per start; default under $TMPDIR), AGUI_SHUTDOWN_GRACE_SECONDS (20), and every setting
# of docs/reference/settings.md.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "serve-prod: $*" >&2; exit 2; }
[ -n "${SECRET_KEY:-}" ] || fail "set SECRET_KEY (a long random string, the same for every worker)"
[ -n "${ALLOWED_HOSTS:-}" ] || fail "set ALLOWED_HOSTS (the host names clients use)"
case "${DATABASE_URL:-}" in postgres://*|postgresql://*) ;; *) fail "set DATABASE_URL to PostgreSQL (postgres://…)";; esac
case "${REDIS_URL:-}" in redis://*|rediss://*) ;; *) fail "set REDIS_URL (the channel layer and the shared cache)";; esac

PYTHON="${PYTHON:-python3.11}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
fi

export DEBUG=0
WORKERS="${WEB_CONCURRENCY:-3}"
GRACE="${AGUI_SHUTDOWN_GRACE_SECONDS:-20}"
export AGUI_SHUTDOWN_GRACE_SECONDS="$GRACE"

manage() { env -u PROMETHEUS_MULTIPROC_DIR .venv/bin/python manage.py "$@"; }  # not the workers' metrics
manage check --deploy --fail-level WARNING  # any warning stops it (docs/operating/index.md "The launcher")
manage migrate --no-input -v 0
manage collectstatic --no-input -v 0

# prometheus-client's multiprocess mode: one directory for the workers of this start, empty at start.
export PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-${TMPDIR:-/tmp}/agui-metrics-${PORT:-8000}}"
rm -rf "$PROMETHEUS_MULTIPROC_DIR"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"

# Uvicorn waits for open connections after SIGTERM; the drain ends runs and followers within the
# grace period, so its own limit is only a backstop.
exec .venv/bin/python -m uvicorn project.asgi:application \
  --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" --workers "$WORKERS" \
  --proxy-headers --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" \
  --timeout-graceful-shutdown "$(.venv/bin/python -c 'import sys; print(int(float(sys.argv[1])) + 15)' "$GRACE")" \
  --no-access-log
