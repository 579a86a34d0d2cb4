#!/usr/bin/env bash
# Set up and run AG-UI Hub on its embedded defaults (SQLite, in-memory channel layer):
#   scripts/serve.sh            → http://127.0.0.1:8000
# Creates .venv, installs, migrates, seeds the demo tenant (prints its API key and a curl that
# streams a run), then starts Uvicorn and, beside it, the task queue's consumer (`manage.py run_huey`:
# webhook deliveries); stopping the script stops both. Each step says what it does as it starts; the
# first install shows pip's own progress (a few minutes), a later start skips pip while
# requirements.txt is unchanged. Environment: PORT, DATABASE_URL, REDIS_URL, SECRET_KEY,
# AGUI_DEMO_API_KEY, DEBUG (see docs/reference/settings.md).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
PORT="${PORT:-8000}"
step() { printf '==> %s\n' "$*"; }

if [ ! -x .venv/bin/python ]; then
  step "Creating the virtual environment .venv ($PYTHON)"
  "$PYTHON" -m venv .venv
fi
# The hash of the requirements last installed into .venv: a start with the same requirements.txt
# skips pip (seconds even with nothing to do). Delete .venv/.requirements.sha256 to reinstall.
STAMP=.venv/.requirements.sha256
WANTED="$(.venv/bin/python -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' requirements.txt)"
if [ "$(cat "$STAMP" 2>/dev/null)" = "$WANTED" ]; then
  step "Requirements already installed (requirements.txt unchanged since the last install)"
else
  step "Installing the requirements into .venv (the first time takes a few minutes; pip's progress follows)"
  .venv/bin/python -m pip install --disable-pip-version-check -r requirements.txt
  printf '%s\n' "$WANTED" > "$STAMP"
fi

# A stable secret for this checkout (DEBUG stays off), in the git-ignored .env that settings read
# (python-dotenv), so every later `manage.py` command works without exporting anything. A secret
# from an older checkout's .secret_key is kept.
if ! grep -qs '^SECRET_KEY=' .env; then
  if [ -s .secret_key ]; then SECRET="$(cat .secret_key)"; else
    SECRET="$(.venv/bin/python -c "import secrets; print(secrets.token_urlsafe(50))")"; fi
  (umask 077; printf 'SECRET_KEY=%s\n' "$SECRET" >> .env)
fi
export ALLOWED_HOSTS="${ALLOWED_HOSTS:-127.0.0.1,localhost}"

step "Migrating the database"
.venv/bin/python manage.py migrate --no-input
# seed_demo creates only what is missing (an edited skill stays as edited) and prints a key only
# when it makes one: the first start, or with AGUI_DEMO_API_KEY.
step "Seeding the demo tenant, its assistant and the skills in skills/"
KEY="$(.venv/bin/python manage.py seed_demo)"
if [ -n "$KEY" ]; then
  KEY_INFO="Demo API key (shown once; stored hashed):
    ${KEY}"
  SHOWN_KEY="$KEY"
else
  KEY_INFO="The demo API key was shown when it was made (see above for its prefix). A new one:
    .venv/bin/python manage.py create_api_key demo"
  SHOWN_KEY='<your demo key>'
fi

cat <<INFO

AG-UI Hub is starting on http://127.0.0.1:${PORT}

  ${KEY_INFO}

  Stream a run:
    curl -N http://127.0.0.1:${PORT}/api/v1/agents/assistant \\
      -H 'Authorization: Bearer ${SHOWN_KEY}' -H 'Content-Type: application/json' -H 'Accept: text/event-stream' \\
      -d '{"threadId":"hello","runId":"run-1","state":{},"messages":[{"id":"m-1","role":"user","content":"What is the weather in Paris?"}],"tools":[],"context":[],"forwardedProps":{}}'

  Playground: http://127.0.0.1:${PORT}/ (sign in with a staff account: .venv/bin/python manage.py createsuperuser)
  API docs: http://127.0.0.1:${PORT}/api/docs   Admin: http://127.0.0.1:${PORT}/admin/ (manage.py createsuperuser)

INFO
# The webhook deliveries' worker (huey; its queue is tasks.sqlite3, or Redis with REDIS_URL) runs
# beside the server; a signal to this script stops both.
.venv/bin/python manage.py run_huey --workers 4 >> tasks.log 2>&1 &
WORKER=$!
.venv/bin/python -m uvicorn project.asgi:application --host 127.0.0.1 --port "$PORT" --no-access-log &
SERVER=$!
trap 'kill "$SERVER" "$WORKER" 2>/dev/null' INT TERM EXIT
wait "$SERVER"
