"""AG-UI Hub settings: one module, driven by the environment.

Embedded defaults (SQLite in WAL mode, the in-memory channel layer) let one command run the
whole service on a fresh machine. Production sets DATABASE_URL (PostgreSQL), REDIS_URL and
SECRET_KEY. Every app setting is prefixed ``AGUI_`` and has its default here.

A git-ignored ``.env`` next to ``manage.py`` (or the file ``AGUI_ENV_FILE`` names) is read first,
with python-dotenv: ``scripts/serve.sh`` writes the checkout's ``SECRET_KEY`` there, so every
``manage.py`` command works without exporting anything. Variables already set win over the file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

BASE_DIR = Path(__file__).resolve().parent.parent
# The project-level folders (templates/, skills/, the built docs site/): beside the packages in a
# checkout; inside project/bundled/ in an installed wheel (setup.py's build_py copies them there).
RESOURCES_DIR = BASE_DIR if (BASE_DIR / "templates").is_dir() else Path(__file__).resolve().parent / "bundled"
load_dotenv(os.environ.get("AGUI_ENV_FILE") or BASE_DIR / ".env", override=False)


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off (set DEBUG=1 for local development)."
        )
    SECRET_KEY = "insecure-development-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS deployment (all off by default: `runserver` on http must keep working) -------------
# Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https (only if
# the proxy always sets or strips that header); `manage.py check --deploy` lists what is still off.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = env_list(
    "SECURE_REDIRECT_EXEMPT", [r"^healthz$", r"^readyz$", r"^metrics$"]
)  # plain-http probes
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
# scripts/serve-prod.sh fails on any `check --deploy` warning; a deliberate exception is silenced here
# (e.g. security.W021 for a domain that will not be on the HSTS preload list).
SILENCED_SYSTEM_CHECKS = env_list("SILENCED_SYSTEM_CHECKS", [])
_proxy_header = env_list("SECURE_PROXY_SSL_HEADER", [])
if _proxy_header and (len(_proxy_header) != 2 or not _proxy_header[0].startswith("HTTP_")):
    raise ImproperlyConfigured(
        f"SECURE_PROXY_SSL_HEADER is 'HTTP_<HEADER>,<value>', e.g. HTTP_X_FORWARDED_PROTO,https; got {_proxy_header!r}"
    )
SECURE_PROXY_SSL_HEADER = (_proxy_header[0], _proxy_header[1]) if _proxy_header else None

INSTALLED_APPS = [
    "daphne",  # provides the Channels-aware `runserver`
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI / ReDoc assets served locally, not from a CDN
    "channels",
    "corsheaders",  # its checks and policy; applied by the ASGI CORS layer, not as a middleware
    "huey.contrib.djhuey",  # the task queue of webhook deliveries (`manage.py run_huey`)
    "agui_app",
    "capabilities",
]

MIDDLEWARE = [
    "agui_app.transports.edge.answers.ApiHostMiddleware",  # outermost: a bad Host under /api/ is JSON
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "agui_app.transports.edge.answers.ApiErrorMiddleware",  # innermost: sees the views' exceptions
]

ROOT_URLCONF = "project.urls"
ASGI_APPLICATION = "project.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [RESOURCES_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the writer; IMMEDIATE takes the write lock at BEGIN, so two
    # writers queue on busy_timeout instead of failing with "database is locked" mid-transaction.
    # Our backend adds one thing: this process's writers take turns on a Python lock, not on
    # SQLite's busy handler, which sleeps up to 100 ms a try (agui_app/concurrency/sqlite/base.py).
    DATABASES["default"]["ENGINE"] = "agui_app.concurrency.sqlite"
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    # A file (not :memory:) so that server processes started by the tests share it; one per test
    # process, so concurrent test runs on one machine do not clobber each other.
    DATABASES["default"]["TEST"] = {
        "NAME": env_str(
            "SQLITE_TEST_NAME", str(Path(tempfile.gettempdir()) / f"agui-hub-test-{os.getpid()}.sqlite3")
        )
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Channels ---------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            # A dead Redis host must not hang a connect: the hub degrades and retries (events.hub).
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_connect_timeout": 2}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Cache (rate limits, the token and origin caches) -------------------------------------
# Shared by every process with Redis; with local memory each process counts on its own (also
# while Redis is down: agui_app.fallback_cache serves from local memory then).
AGUI_CACHE_RETRY_SECONDS = env_float("AGUI_CACHE_RETRY_SECONDS", 5.0)
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "agui_app.fallback_cache.FallbackRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "agui",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "KEY_PREFIX": "agui"}}

# --- Auth, i18n, static -----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
AGUI_SKILLS_DIR = RESOURCES_DIR / "skills"  # the demo skills seed_demo imports
AGUI_DOCS_SITE_DIR = RESOURCES_DIR / "site"  # `mkdocs build`'s output, served under /docs/ when present
# Every middleware here is async-capable: one sync-only middleware would run each request in a
# worker thread and hold it for the whole of a streaming response. Static files (the admin's)
# are served by ``ASGIStaticFilesHandler`` in project/asgi.py.
# DATA_UPLOAD_MAX_MEMORY_SIZE: set with the file settings at the end.

# --- REST framework ---------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["agui_app.transports.edge.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "agui_app.transports.rest.policies.ScopeRequired",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["agui_app.transports.rest.policies.CredentialRateThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["agui_app.transports.rest.parsers.JsonParser"],
    "EXCEPTION_HANDLER": "agui_app.transports.edge.answers.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "AG-UI Hub API",
    "DESCRIPTION": "Multi-tenant AG-UI server: agents, threads, shared state, event log. "
    "The documentation (guides, the WebSocket protocol, error codes, limits, settings) is at "
    "[/docs/](/docs/) when built (`mkdocs build`), and under `docs/` in the repository.",
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A run's status appears in the run summary and the run detail (with its sub-agents): one name.
    "ENUM_NAME_OVERRIDES": {"RunStatusEnum": "agui_app.models.runs.RunStatus"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "agui_app.transports.rest.openapi.schema.add_agui_endpoints",
    ],
}

# --- CORS (django-cors-headers, applied at the ASGI level to Django and the SSE consumers) --
# No static list: a browser origin is allowed when some tenant lists it (Tenant.allowed_origins,
# admin or PATCH /api/v1/tenant); requests are then held to their own tenant's list on auth.
CORS_ALLOWED_ORIGINS: list[str] = []
CORS_URLS_REGEX = r"^/api/v1/"
CORS_ALLOW_HEADERS = [
    "accept",
    "authorization",
    "content-type",
    "if-match",
    "if-none-match",
    "last-event-id",
    "user-agent",
    "x-requested-with",
]
CORS_EXPOSE_HEADERS = ["etag", "retry-after"]
CORS_PREFLIGHT_MAX_AGE = env_int("AGUI_CORS_PREFLIGHT_MAX_AGE", 600)
CORS_ALLOW_CREDENTIALS = False  # bearer tokens, never cookies, cross-origin

# AGUI_LOG_FORMAT=json: one JSON object per line; text (the default): the message, then key=value fields.
AGUI_LOG_FORMAT = "json" if env_str("AGUI_LOG_FORMAT", "text").lower() == "json" else "plain"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            "()": "agui_app.logs.KeyValueFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s: %(message)s",
        },
        "json": {"()": "agui_app.logs.JsonFormatter"},
    },
    # No query string, header or body in any line: the filter cleans what Django and the servers log.
    "filters": {"request_data": {"()": "agui_app.logs.RequestDataFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": AGUI_LOG_FORMAT,
            "filters": ["request_data"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's and the servers' loggers write through the console handler (and its filter), not
        # through handlers of their own (Django's defaults and uvicorn's own configuration add some).
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"handlers": [], "level": "INFO", "propagate": True},
        "uvicorn": {"handlers": [], "propagate": True},
        "uvicorn.access": {"handlers": [], "propagate": True},
        "django.db.backends": {"level": "INFO"},
        # Their INFO line per request names the URL an outbound call went to (a webhook's may hold
        # the receiver's token): warnings only.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        "httpcore2": {"level": "WARNING"},
    },
}

# --- AG-UI Hub --------------------------------------------------------------------------
AGUI_DEFAULT_MODEL = env_str("AGUI_DEFAULT_MODEL", "demo")
AGUI_DEMO_API_KEY = env_str("AGUI_DEMO_API_KEY")
AGUI_MAX_BODY_BYTES = env_int("AGUI_MAX_BODY_BYTES", 1024 * 1024)
AGUI_JSON_MAX_DEPTH = env_int("AGUI_JSON_MAX_DEPTH", 256)  # nesting of any JSON body or frame
AGUI_METADATA_MAX_BYTES = env_int("AGUI_METADATA_MAX_BYTES", 16 * 1024)  # a thread's metadata, as JSON
AGUI_RUN_MAX_MESSAGES = env_int("AGUI_RUN_MAX_MESSAGES", 1000)  # messages in one RunAgentInput
AGUI_RUN_MAX_TOOLS = env_int("AGUI_RUN_MAX_TOOLS", 128)  # frontend tools in one RunAgentInput
AGUI_TOOL_ARGS_MAX_BYTES = env_int("AGUI_TOOL_ARGS_MAX_BYTES", 64 * 1024)  # one tool call's arguments
AGUI_ADMIN_MAX_BODY_BYTES = env_int("AGUI_ADMIN_MAX_BODY_BYTES", 16 * 1024 * 1024)  # bodies outside /api/
AGUI_BODY_TIMEOUT_SECONDS = env_float("AGUI_BODY_TIMEOUT_SECONDS", 30.0)  # to receive a whole request body
AGUI_MAX_REQUESTS_PER_CLIENT = env_int(
    "AGUI_MAX_REQUESTS_PER_CLIENT", 256
)  # open at once per address; 0: off
AGUI_SSE_KEEPALIVE_SECONDS = env_float("AGUI_SSE_KEEPALIVE_SECONDS", 15.0)
# How long an approval interrupt waits when its agent sets no approval_ttl_seconds; 0: no expiry.
AGUI_APPROVAL_TTL_SECONDS = env_int("AGUI_APPROVAL_TTL_SECONDS", 0)
AGUI_EVENT_FLUSH_EVENTS = env_int("AGUI_EVENT_FLUSH_EVENTS", 256)
AGUI_EVENT_FLUSH_MS = env_int("AGUI_EVENT_FLUSH_MS", 5)
AGUI_EVENTS_PAGE_DEFAULT = env_int("AGUI_EVENTS_PAGE_DEFAULT", 1000)
AGUI_EVENTS_PAGE_MAX = env_int("AGUI_EVENTS_PAGE_MAX", 10000)
AGUI_MESSAGES_PAGE_DEFAULT = env_int("AGUI_MESSAGES_PAGE_DEFAULT", 100)  # GET …/messages
AGUI_MESSAGES_PAGE_MAX = env_int("AGUI_MESSAGES_PAGE_MAX", 1000)
AGUI_SUBSCRIBER_BUFFER = env_int("AGUI_SUBSCRIBER_BUFFER", 10000)
AGUI_DB_THREADS = env_int("AGUI_DB_THREADS", 8)  # shared threads (and connections) for async code's ORM work
AGUI_FOLLOW_POLL_SECONDS = env_float("AGUI_FOLLOW_POLL_SECONDS", 2.0)  # idle log poll of followers
AGUI_LAYER_CHECK_SECONDS = env_float("AGUI_LAYER_CHECK_SECONDS", 5.0)  # channel layer check / reconnect
AGUI_RUN_HEARTBEAT_SECONDS = env_float("AGUI_RUN_HEARTBEAT_SECONDS", 5.0)
AGUI_RUN_STALE_SECONDS = env_float("AGUI_RUN_STALE_SECONDS", 30.0)
# SIGTERM: stop admitting runs (503 + Retry-After), let active runs finish this long, then interrupt the rest.
AGUI_SHUTDOWN_GRACE_SECONDS = env_float("AGUI_SHUTDOWN_GRACE_SECONDS", 20.0)
AGUI_SHUTDOWN_RETRY_AFTER_SECONDS = env_int("AGUI_SHUTDOWN_RETRY_AFTER_SECONDS", 5)
AGUI_METRICS_TOKEN = env_str("AGUI_METRICS_TOKEN")  # GET /metrics bearer token; unset: loopback clients only
AGUI_TENANT_MAX_ACTIVE_RUNS = env_int("AGUI_TENANT_MAX_ACTIVE_RUNS", 200)  # a tenant's own limit wins
AGUI_REQUESTS_PER_MINUTE = env_int("AGUI_REQUESTS_PER_MINUTE", 600)  # per key / per end user
AGUI_RUNS_PER_MINUTE = env_int("AGUI_RUNS_PER_MINUTE", 60)  # run starts per key / per end user
AGUI_TOKEN_DEFAULT_TTL_SECONDS = env_int("AGUI_TOKEN_DEFAULT_TTL_SECONDS", 3600)
AGUI_TOKEN_MAX_TTL_SECONDS = env_int("AGUI_TOKEN_MAX_TTL_SECONDS", 86400)
AGUI_KEY_ROTATION_GRACE_SECONDS = env_int("AGUI_KEY_ROTATION_GRACE_SECONDS", 86400)
AGUI_TENANT_CACHE_SECONDS = env_int("AGUI_TENANT_CACHE_SECONDS", 300)
# Per-process caches of principals and assembled agents (runtime.warm): each entry lives this long
# at most (changes reach every process sooner, over the channel layer).
AGUI_CONFIG_CACHE_SECONDS = env_float("AGUI_CONFIG_CACHE_SECONDS", 1.0)
AGUI_CONFIG_CACHE_MAX_ENTRIES = env_int("AGUI_CONFIG_CACHE_MAX_ENTRIES", 10_000)
# Stored histories kept per process (conversation_store.HistoryCache): a thread's next run here reads
# only its record. 0 turns it off.
AGUI_HISTORY_CACHE_THREADS = env_int("AGUI_HISTORY_CACHE_THREADS", 256)  # token checks read tenants from here
AGUI_MULTITASK_WAIT_SECONDS = env_float("AGUI_MULTITASK_WAIT_SECONDS", 10.0)
AGUI_DISCONNECT_GRACE_SECONDS = env_float("AGUI_DISCONNECT_GRACE_SECONDS", 10.0)  # onDisconnect=cancel
AGUI_MAX_QUEUED_RUNS = env_int("AGUI_MAX_QUEUED_RUNS", 10)  # per thread (multitask=enqueue)
AGUI_DEFAULT_MAX_ITERATIONS = env_int("AGUI_DEFAULT_MAX_ITERATIONS", 25)
AGUI_DEFAULT_MAX_EXECUTION_SECONDS = env_int("AGUI_DEFAULT_MAX_EXECUTION_SECONDS", 300)
AGUI_STATE_MAX_BYTES = env_int("AGUI_STATE_MAX_BYTES", 4 * 1024 * 1024)
AGUI_STATE_MAX_CONTAINERS = env_int("AGUI_STATE_MAX_CONTAINERS", 200_000)  # objects + arrays in a state
AGUI_PATCH_MAX_OPS = env_int("AGUI_PATCH_MAX_OPS", 1000)  # operations in one JSON Patch
AGUI_PATCH_MAX_WORK_BYTES = env_int("AGUI_PATCH_MAX_WORK_BYTES", 16 * 1024 * 1024)  # copied/measured
AGUI_STATE_IN_PROMPT_CHARS = env_int("AGUI_STATE_IN_PROMPT_CHARS", 8000)
AGUI_PREDICT_STATE_PER_SECOND = env_float("AGUI_PREDICT_STATE_PER_SECOND", 20.0)  # per key, per run
AGUI_PRIVATE_STATE_KEYS = env_list("AGUI_PRIVATE_STATE_KEYS", [])  # server-only, for every agent
AGUI_PRIVATE_STATE_IN_PROMPT = env_bool("AGUI_PRIVATE_STATE_IN_PROMPT", False)  # show them to the model
AGUI_SKILL_MAX_BODY_CHARS = env_int("AGUI_SKILL_MAX_BODY_CHARS", 20000)
AGUI_SKILL_MAX_SOURCE_CHARS = env_int("AGUI_SKILL_MAX_SOURCE_CHARS", 64 * 1024)  # a whole skill file
AGUI_SKILL_IMPORT_MAX_FILES = env_int("AGUI_SKILL_IMPORT_MAX_FILES", 500)
AGUI_SKILL_IMPORT_MAX_BYTES = env_int("AGUI_SKILL_IMPORT_MAX_BYTES", 10 * 1024 * 1024)  # uncompressed
AGUI_SKILL_RESOURCE_MAX_BYTES = env_int("AGUI_SKILL_RESOURCE_MAX_BYTES", 256 * 1024)  # one Agent Skills file
# Keys (Fernet, comma-separated, newest first) that encrypt every secret at rest (webhook signing
# secrets, MCP server headers): the first encrypts, all decrypt. Unset: one derived from SECRET_KEY.
AGUI_SECRETS_KEYS = env_list("AGUI_SECRETS_KEYS", [])
if os.environ.get("AGUI_WEBHOOK_ENCRYPTION_KEY"):
    raise ImproperlyConfigured(
        "AGUI_WEBHOOK_ENCRYPTION_KEY is no longer read: webhook secrets use AGUI_SECRETS_KEYS like every "
        "secret at rest. Unset it, set AGUI_SECRETS_KEYS, and rotate the tenants' webhook secrets."
    )
# Models served with a tenant's credential (docs/design.md §24): the SDK's retries of a failed request
# (a 429, a dropped connection) before the run fails or falls back, and the read timeout.
AGUI_MODEL_MAX_RETRIES = env_int("AGUI_MODEL_MAX_RETRIES", 2)
AGUI_MODEL_TIMEOUT_SECONDS = env_float("AGUI_MODEL_TIMEOUT_SECONDS", 600.0)
AGUI_MCP_TOOLS_TTL_SECONDS = env_int("AGUI_MCP_TOOLS_TTL_SECONDS", 300)  # tools discovered from a server
AGUI_SKILL_IMPORT_MAX_RATIO = env_int(
    "AGUI_SKILL_IMPORT_MAX_RATIO", 100
)  # per zip member, uncompressed:compressed
AGUI_REGISTRY_MAX_BODY_BYTES = env_int("AGUI_REGISTRY_MAX_BODY_BYTES", 1024 * 1024)  # agent/skill JSON
AGUI_SCHEMA_MAX_BYTES = env_int("AGUI_SCHEMA_MAX_BYTES", 64 * 1024)  # state and output JSON Schemas
# Long-term memory (docs/design.md §20). A tenant's own limits (admin) win over these defaults.
# Sub-agents and handoffs (docs/concepts/subagents.md)
AGUI_SUBAGENT_MAX_DEPTH = env_int("AGUI_SUBAGENT_MAX_DEPTH", 3)  # nesting of delegations in one run
AGUI_SUBAGENT_MAX_PER_RUN = env_int("AGUI_SUBAGENT_MAX_PER_RUN", 10)  # delegations in one run, all depths
AGUI_SUBAGENT_MAX_TASK_CHARS = env_int("AGUI_SUBAGENT_MAX_TASK_CHARS", 20_000)  # a delegated task's text
AGUI_MEMORY_MAX_ITEMS = env_int("AGUI_MEMORY_MAX_ITEMS", 100_000)  # items per tenant (429 past it)
AGUI_MEMORY_MAX_ITEM_BYTES = env_int("AGUI_MEMORY_MAX_ITEM_BYTES", 16 * 1024)  # value JSON + text (413)
AGUI_MEMORY_SEARCH_MAX_LIMIT = env_int("AGUI_MEMORY_SEARCH_MAX_LIMIT", 100)  # results of one search
# Embeddings for memory search: empty (text search only), "hash" / "hash:<dimensions>" (the offline,
# deterministic feature-hashing model) or a pydantic-ai embedding model id ("openai:text-embedding-3-small").
AGUI_EMBEDDING_MODEL = env_str("AGUI_EMBEDDING_MODEL")
AGUI_MEMORY_TEXT_WEIGHT = env_float("AGUI_MEMORY_TEXT_WEIGHT", 0.5)  # text rank's share of the score
AGUI_MEMORY_VECTOR_SCAN = env_int("AGUI_MEMORY_VECTOR_SCAN", 500)  # recent items compared without pgvector
AGUI_MEMORY_EXPIRY_MINUTES = env_int("AGUI_MEMORY_EXPIRY_MINUTES", 60)  # how often expired items are purged
AGUI_WEBSOCKET_ENABLED = env_bool("AGUI_WEBSOCKET_ENABLED", True)
# Webhooks and MCP servers may call private, loopback and link-local addresses (off: refused).
AGUI_OUTBOUND_ALLOW_PRIVATE = env_bool("AGUI_OUTBOUND_ALLOW_PRIVATE", False)
AGUI_WS_MAX_FRAME_BYTES = env_int("AGUI_WS_MAX_FRAME_BYTES", 1024 * 1024)
AGUI_WS_AUTH_TIMEOUT_SECONDS = env_float("AGUI_WS_AUTH_TIMEOUT_SECONDS", 10.0)
AGUI_TOOL_MODULES = env_list("AGUI_TOOL_MODULES", ["capabilities.tools.builtin", "capabilities.tools.demo"])

# Background runs: GET …/runs/{run}/wait blocks at most this long (a longer ?timeout= is cut to it).
AGUI_RUN_WAIT_DEFAULT_SECONDS = env_float("AGUI_RUN_WAIT_DEFAULT_SECONDS", 30.0)
AGUI_RUN_WAIT_MAX_SECONDS = env_float("AGUI_RUN_WAIT_MAX_SECONDS", 300.0)

# Webhooks (services.webhooks): one outbox row per terminal run, delivered by huey jobs. Attempt n
# (n >= 1) failing waits RETRY_SECONDS * BACKOFF**(n-1): 25 s, 75 s, … 22.8 h in all over 9 tries.
AGUI_WEBHOOK_TIMEOUT_SECONDS = env_float("AGUI_WEBHOOK_TIMEOUT_SECONDS", 10.0)
AGUI_WEBHOOK_MAX_ATTEMPTS = env_int("AGUI_WEBHOOK_MAX_ATTEMPTS", 9)
AGUI_WEBHOOK_RETRY_SECONDS = env_float("AGUI_WEBHOOK_RETRY_SECONDS", 25.0)
AGUI_WEBHOOK_RETRY_BACKOFF = env_float("AGUI_WEBHOOK_RETRY_BACKOFF", 3.0)
# A delivery whose attempt has not reported back within this long (its worker died) is sent again.
AGUI_WEBHOOK_LEASE_SECONDS = env_float("AGUI_WEBHOOK_LEASE_SECONDS", 60.0)
AGUI_WEBHOOK_SWEEP_MINUTES = env_int("AGUI_WEBHOOK_SWEEP_MINUTES", 1)
# Tracing is off unless OTEL_TRACES_EXPORTER names an exporter (agui_app/tracing.py). With this,
# prompts, completions and tool arguments go into pydantic-ai's spans too.
AGUI_TRACE_CONTENT = env_bool("AGUI_TRACE_CONTENT", False)
# Event-log retention (a tenant's own days win): days after a run ends before its token-level events
# are merged (0: at the next pass; negative: never), and before all its events are deleted (0: never).
AGUI_EVENT_COMPACT_AFTER_DAYS = env_int("AGUI_EVENT_COMPACT_AFTER_DAYS", 7)
AGUI_EVENT_EXPIRE_AFTER_DAYS = env_int("AGUI_EVENT_EXPIRE_AFTER_DAYS", 0)
AGUI_EVENT_RETENTION_MINUTES = env_int("AGUI_EVENT_RETENTION_MINUTES", 60)  # how often the huey job runs
# Thread lifecycle (services.lifecycle; a tenant's own days win; 0: never): idle threads deleted with all
# they hold; finished runs' rows and events deleted (each thread keeps its last run); state revisions older
# than the period folded into one snapshot, taken at a multiple of AGUI_STATE_SNAPSHOT_EVERY; conversation
# branches left behind (rolled back, regenerated; no API shows them) and finished webhook deliveries deleted.
AGUI_THREAD_DELETE_AFTER_DAYS = env_int("AGUI_THREAD_DELETE_AFTER_DAYS", 0)
AGUI_RUN_DELETE_AFTER_DAYS = env_int("AGUI_RUN_DELETE_AFTER_DAYS", 0)
AGUI_STATE_HISTORY_KEEP_DAYS = env_int("AGUI_STATE_HISTORY_KEEP_DAYS", 0)
AGUI_STATE_SNAPSHOT_EVERY = env_int("AGUI_STATE_SNAPSHOT_EVERY", 100)
AGUI_BRANCH_KEEP_DAYS = env_int("AGUI_BRANCH_KEEP_DAYS", 1)
AGUI_WEBHOOK_DELIVERY_KEEP_DAYS = env_int("AGUI_WEBHOOK_DELIVERY_KEEP_DAYS", 30)
AGUI_LIFECYCLE_MINUTES = env_int("AGUI_LIFECYCLE_MINUTES", 60)  # how often the huey job applies it
# After a rotation the previous webhook secret signs too (a second signature) for this long.
AGUI_WEBHOOK_SECRET_GRACE_SECONDS = env_int("AGUI_WEBHOOK_SECRET_GRACE_SECONDS", 86400)

# Schedules (services.schedules): per tenant at most this many (a tenant's own limit wins), firing at
# most once per MIN_INTERVAL; the worker looks for due schedules every TICK seconds (1-60). The seconds
# field lets a cron have a 6th field, seconds — for tests and demos only (MIN_INTERVAL still holds).
AGUI_SCHEDULES_PER_TENANT = env_int("AGUI_SCHEDULES_PER_TENANT", 100)
AGUI_SCHEDULE_MIN_INTERVAL_SECONDS = env_int("AGUI_SCHEDULE_MIN_INTERVAL_SECONDS", 60)
AGUI_SCHEDULE_TICK_SECONDS = min(60, max(1, env_int("AGUI_SCHEDULE_TICK_SECONDS", 10)))
AGUI_SCHEDULE_SECONDS_FIELD = env_bool("AGUI_SCHEDULE_SECONDS_FIELD", False)
AGUI_SCHEDULE_INPUT_MAX_BYTES = env_int("AGUI_SCHEDULE_INPUT_MAX_BYTES", 64 * 1024)  # its input, as JSON

# huey, the task queue: Redis storage when REDIS_URL is set, else a SQLite file of its own
# (AGUI_TASKS_SQLITE_FILE); AGUI_TASKS_STORAGE=memory keeps it in the process (the tests' default).
# Its consumer is `manage.py run_huey` (scripts/serve.sh starts it beside the server).
AGUI_TASKS_STORAGE = env_str("AGUI_TASKS_STORAGE", "redis" if REDIS_URL else "sqlite")
AGUI_TASKS_SQLITE_FILE = env_str("AGUI_TASKS_SQLITE_FILE", str(BASE_DIR / "tasks.sqlite3"))
_HUEY_CONSUMER = {
    "workers": env_int("AGUI_TASKS_WORKERS", 4),
    "worker_type": "thread",
    "initial_delay": 0.05,  # SQLite storage is polled: back off from 50 ms to at most max_delay
    "backoff": 1.5,
    "max_delay": env_float("AGUI_TASKS_POLL_MAX_SECONDS", 0.5),
    "periodic": True,
}
HUEY: dict[str, object] = {
    "name": env_str("AGUI_TASKS_QUEUE", "agui-hub"),
    "immediate": False,  # djhuey's default follows DEBUG; jobs always go through the queue
    "results": False,
    "utc": True,
    "consumer": _HUEY_CONSUMER,
}
if AGUI_TASKS_STORAGE == "redis":
    HUEY |= {"huey_class": "huey.RedisHuey", "url": REDIS_URL}
elif AGUI_TASKS_STORAGE == "memory":
    HUEY |= {"huey_class": "huey.MemoryHuey"}
else:
    HUEY |= {"huey_class": "huey.SqliteHuey", "filename": AGUI_TASKS_SQLITE_FILE}

# --- Files (agui_app.services.files; DESIGN §21) ---------------------------------------------------
# Uploads and the files of run input parts go through Django's storage API (STORAGES["agui_files"]):
# local files under AGUI_FILES_ROOT by default; AGUI_FILES_STORAGE=s3 uses django-storages' S3 backend
# (any S3-compatible service: AGUI_FILES_S3_* below, credentials from the usual AWS_* variables).
AGUI_FILE_MAX_BYTES = env_int("AGUI_FILE_MAX_BYTES", 20 * 1024 * 1024)  # one file (413 past it)
AGUI_FILE_QUOTA_BYTES = env_int(
    "AGUI_FILE_QUOTA_BYTES", 1024 * 1024 * 1024
)  # a tenant's files (its own wins)
AGUI_FILE_UPLOAD_TIMEOUT_SECONDS = env_float(
    "AGUI_FILE_UPLOAD_TIMEOUT_SECONDS", 300.0
)  # a whole upload's body
AGUI_FILE_PARTS_PER_MESSAGE = env_int("AGUI_FILE_PARTS_PER_MESSAGE", 10)  # media parts of one user message
AGUI_FILE_RETENTION_DAYS = env_int("AGUI_FILE_RETENTION_DAYS", 7)  # unreferenced files kept (0: forever)
AGUI_FILE_RETENTION_MINUTES = env_int("AGUI_FILE_RETENTION_MINUTES", 60)  # how often the worker's job runs
AGUI_FILE_ALLOWED_TYPES = env_list(
    "AGUI_FILE_ALLOWED_TYPES",
    [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "application/pdf",
        "text/plain",
        "audio/mpeg",
        "audio/wav",
        "audio/ogg",
        "video/mp4",
        "video/webm",
    ],
)  # sniffed types a tenant may store (a tenant's own list narrows it)
AGUI_FILES_STORAGE = env_str("AGUI_FILES_STORAGE", "local").lower()  # local | s3
AGUI_FILES_ROOT = env_str("AGUI_FILES_ROOT", str(BASE_DIR / "files"))
if AGUI_FILES_STORAGE == "s3":
    from boto3.s3.transfer import TransferConfig

    _FILES_STORAGE: dict[str, object] = {
        "BACKEND": "agui_app.file_storage.S3FileStorage",
        "OPTIONS": {
            "bucket_name": env_str("AGUI_FILES_S3_BUCKET", "agui-files"),
            "endpoint_url": env_str("AGUI_FILES_S3_ENDPOINT_URL") or None,
            "region_name": env_str("AGUI_FILES_S3_REGION") or None,
            "location": env_str("AGUI_FILES_S3_PREFIX", ""),
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": False,
            "max_memory_size": 1024 * 1024,  # a file read back spools to disk past 1 MiB
            # At most this many 8 MiB parts of one upload in memory at once (boto3's default is 10).
            "transfer_config": TransferConfig(
                max_concurrency=env_int("AGUI_FILES_S3_CONCURRENCY", 2), multipart_chunksize=8 * 1024 * 1024
            ),
        },
    }
else:
    _FILES_STORAGE = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": AGUI_FILES_ROOT},
    }
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "agui_files": _FILES_STORAGE,
}
# Django's own multipart parser (admin forms) keeps at most this much of a file in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# Bodies Django parses itself (admin forms; the API's REST views) stay within the largest body the
# request guard lets through outside /api/v1/files (which streams its uploads: services.files).
DATA_UPLOAD_MAX_MEMORY_SIZE = AGUI_ADMIN_MAX_BODY_BYTES
# Feedback (services.feedback) and interventions (services.interventions): the limits on what a rater
# or a human steering a run may send.
AGUI_FEEDBACK_COMMENT_MAX_CHARS = env_int("AGUI_FEEDBACK_COMMENT_MAX_CHARS", 2000)
AGUI_FEEDBACK_MAX_TAGS = env_int("AGUI_FEEDBACK_MAX_TAGS", 10)
AGUI_FEEDBACK_IN_INSTRUCTIONS = env_int("AGUI_FEEDBACK_IN_INSTRUCTIONS", 5)  # corrections a run is told
AGUI_INTERVENTION_MAX_CHARS = env_int("AGUI_INTERVENTION_MAX_CHARS", 4000)
