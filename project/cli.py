"""``agui-hub``: the console command of an installed wheel (``pip install agui_hub-*.whl``).

``agui-hub serve [--host H] [--port P] [--data-dir D]`` does what ``scripts/serve.sh`` does for a
checkout: keeps a secret key in ``D/.env``, migrates the database (``D/db.sqlite3`` unless
``DATABASE_URL`` says otherwise), seeds the demo tenant (printing its key the first time), starts the
task worker (``run_huey``) beside Uvicorn, and stops both together. ``agui-hub manage <command>`` is
``manage.py`` (``agui-hub manage createsuperuser``).
"""

from __future__ import annotations

import argparse
import io
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path


def prepare_environment(data_dir: Path) -> None:
    """The embedded defaults under ``data_dir``; variables already set win."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env_file = data_dir / ".env"
    if not env_file.exists():
        env_file.touch(mode=0o600)
        env_file.write_text(f"SECRET_KEY={secrets.token_urlsafe(50)}\n")
    os.environ.setdefault("AGUI_ENV_FILE", str(env_file))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{data_dir / 'db.sqlite3'}")
    os.environ.setdefault("AGUI_TASKS_SQLITE_FILE", str(data_dir / "tasks.sqlite3"))
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")


def serve(host: str, port: int, data_dir: Path, workers: int) -> int:
    import django
    from django.core.management import call_command

    django.setup()
    print("==> Migrating the database", flush=True)
    call_command("migrate", interactive=False, verbosity=0)
    print("==> Seeding the demo tenant, its assistant and the demo skills", flush=True)
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    key = out.getvalue().strip()
    shown = key or "<your demo key>"
    print(
        f"\nAG-UI Hub is starting on http://{host}:{port}\n\n"
        + (
            f"  Demo API key (shown once; stored hashed):\n    {key}\n"
            if key
            else "  The demo API key was shown when it was made. A new one:\n"
            "    agui-hub manage create_api_key demo\n"
        )
        + f"\n  Stream a run:\n    curl -N http://{host}:{port}/api/v1/agents/assistant \\\n"
        f"      -H 'Authorization: Bearer {shown}' -H 'Content-Type: application/json' "
        "-H 'Accept: text/event-stream' \\\n"
        """      -d '{"threadId":"hello","runId":"run-1","state":{},"messages":[{"id":"m-1","role":"user","""
        """"content":"What is the weather in Paris?"}],"tools":[],"context":[],"forwardedProps":{}}'\n\n"""
        f"  Playground: http://{host}:{port}/ (a staff account: agui-hub manage createsuperuser)\n"
        f"  Docs: http://{host}:{port}/docs/   API docs: http://{host}:{port}/api/docs\n",
        flush=True,
    )
    with (data_dir / "tasks.log").open("ab") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "project.cli", "manage", "run_huey", "--workers", str(workers)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    # Uvicorn re-raises the signal that stopped it once it has shut down, with the handler it found: this
    # one turns SIGTERM into SystemExit, so the worker is stopped below and the command exits 0.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        import uvicorn

        uvicorn.run("project.asgi:application", host=host, port=port, access_log=False)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["manage"]:
        prepare_environment(Path(os.environ.get("AGUI_DATA_DIR", ".agui-hub")).resolve())
        from django.core.management import execute_from_command_line

        execute_from_command_line(["agui-hub manage", *args[1:]])
        return 0
    parser = argparse.ArgumentParser(prog="agui-hub", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="migrate, seed the demo tenant, run the server and the worker")
    run.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    run.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    run.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("AGUI_DATA_DIR", ".agui-hub")),
        help="the SQLite database, the task queue, the secret key (default: ./.agui-hub, or AGUI_DATA_DIR)",
    )
    run.add_argument("--workers", type=int, default=2, help="threads of the task worker (run_huey)")
    commands.add_parser("manage", help="a manage.py command: agui-hub manage createsuperuser")
    options = parser.parse_args(args)
    data_dir = options.data_dir.resolve()
    os.environ["AGUI_DATA_DIR"] = str(data_dir)  # the worker's `manage` finds the same files
    prepare_environment(data_dir)
    return serve(options.host, options.port, data_dir, options.workers)


if __name__ == "__main__":
    sys.exit(main())
