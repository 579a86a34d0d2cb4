#!/usr/bin/env bash
# Set up the test environment and run the whole test suite: `scripts/test.sh [pytest args]`.
#
# Creates .venv with the dev requirements, installs the Node real-client packages (tests/node, and
# clients/copilotkit's CopilotKit runtime) when npm is available, then runs pytest. Defaults to SQLite and the in-memory channel layer;
# set DATABASE_URL=postgres://… and REDIS_URL=redis://… for the service-backed tests (CI does).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt

if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
  npm ci --prefix tests/node --no-audit --no-fund --loglevel=error >/dev/null
  # CopilotKit's runtime for the hub runner's test (clients/copilotkit): large, so only when its lock changed.
  if [ ! clients/copilotkit/node_modules/.package-lock.json -nt clients/copilotkit/package-lock.json ]; then
    npm ci --prefix clients/copilotkit --no-audit --no-fund --loglevel=error >/dev/null
  fi
else
  echo "note: node/npm not found: the @ag-ui/client real-client tests will be skipped" >&2
fi

exec .venv/bin/python -m pytest "$@"
