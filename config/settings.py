"""Project settings: everything comes from environment variables (see README)."""

from __future__ import annotations

import secrets
from importlib.util import find_spec
from pathlib import Path

import dj_database_url

from config.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_latency,
    env_list,
    env_str,
)
from predictions.strategies import STRATEGIES

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once and kept in var/."""
    key = env_str("SECRET_KEY")
    if key:
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50), encoding="utf-8")
        path.chmod(0o600)
    return path.read_text(encoding="utf-8").strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
PORT = env_int("PORT", 8000, minimum=1)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "predictions",
    "workers",
    "webui",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webui.context_processors.live",
            ],
        },
    },
]

# --- Database: SQLite under var/ by default, PostgreSQL (or any) through DATABASE_URL.
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while a worker writes; IMMEDIATE avoids lock upgrades.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not :memory:, so the Celery worker started by the tests sees the same data.
    # TEST_SQLITE_NAME differs per test run, so parallel runs do not share a file.
    _test_db = env_str("TEST_SQLITE_NAME", "test-db.sqlite3")
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / _test_db)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: broker, result backend, cache (and, later, the channel layer).
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "stockserve",
        "TIMEOUT": 300,
    }
}

# --- Prediction service.
PREDICTION_CACHE_TTL = env_int("PREDICTION_CACHE_TTL", 900, minimum=0)
PREDICTION_TIMEOUT = env_int("PREDICTION_TIMEOUT", 300, minimum=10)
PREDICTION_MODELS = env_list("PREDICTION_MODELS", ["naive", "ridge", "arima", "lstm", "tcn"])
PREDICTION_MAX_WAIT = env_int("PREDICTION_MAX_WAIT", 60, minimum=0)
PRICE_PROVIDERS = env_list("PRICE_PROVIDERS", ["yfinance", "sample"])
YFINANCE_TIMEOUT = env_float("YFINANCE_TIMEOUT", 3.0, minimum=0.1)
YFINANCE_PERIOD = env_str("YFINANCE_PERIOD", "5y")
PRICE_BREAKER_SECONDS = env_int("PRICE_BREAKER_SECONDS", 300, minimum=1)
PRICE_LATENCY_MS = env_latency("PRICE_LATENCY_MS")
MENTION_PROVIDERS = env_list("MENTION_PROVIDERS", ["x", "sample"])
MENTION_LATENCY_MS = env_latency("MENTION_LATENCY_MS")
MENTION_LIMIT = env_int("MENTION_LIMIT", 50, minimum=10)
X_BEARER_TOKEN = env_str("X_BEARER_TOKEN")
X_TIMEOUT = env_float("X_TIMEOUT", 5.0, minimum=0.1)
SENTIMENT_MAX_ADJUST = env_float("SENTIMENT_MAX_ADJUST", 0.01, minimum=0.0)
MODEL_SEED = env_int("MODEL_SEED", 0)
REGISTRY_KEEP_GENERATIONS = env_int("REGISTRY_KEEP_GENERATIONS", 3, minimum=1)

# --- Celery (https://docs.celeryq.dev/en/stable/userguide/configuration.html).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
# Redelivery of unacknowledged messages: keep this above the hard time limit.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=60)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("TASK_SOFT_TIME_LIMIT", 120, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("TASK_TIME_LIMIT", 150, minimum=2)
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_TASK_TRACK_STARTED = True
CELERY_WORKER_SEND_TASK_EVENTS = True
CELERY_BEAT_SCHEDULE = {
    "sweep-stale-predictions": {
        "task": "workers.tasks.sweep_stale_predictions",
        "schedule": env_int("SWEEP_INTERVAL", 15, minimum=1),
        "options": {"queue": "io", "expires": 60},
    },
}
WORKER_GPU = env_str("WORKER_GPU", "auto")  # auto | on | off
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 5, minimum=1)
# Threads TensorFlow uses in each pool process (0 = TensorFlow's default, all cores): one
# per process keeps concurrent deep models from fighting over the cores.
WORKER_TF_THREADS = env_int("WORKER_TF_THREADS", 1, minimum=0)
# Ansible inventories for `manage.py workers` and the workers page (comma-separated paths).
PROVISIONING_INVENTORY = env_list(
    "PROVISIONING_INVENTORY", [str(BASE_DIR / "playbooks" / "inventory" / "example.yml")]
)
# How long a process trusts its answer to "is a gpu worker alive?" (routing, seconds).
ROUTING_CACHE_SECONDS = env_float("ROUTING_CACHE_SECONDS", 5.0, minimum=0.0)

# --- Scheduling strategies (workers/strategies/): default, and the cascade's thresholds.
DEFAULT_STRATEGY = env_choice("DEFAULT_STRATEGY", "chord", STRATEGIES)
# The cascade runs the deep models when the cheap ones' day-h forecasts spread more than
# this fraction of the combined value, or their backtest MASE is not below CASCADE_MAX_MASE.
CASCADE_MAX_SPREAD = env_float("CASCADE_MAX_SPREAD", 0.02, minimum=0.0)
CASCADE_MAX_MASE = env_float("CASCADE_MAX_MASE", 1.0, minimum=0.0)

# --- REST API.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("THROTTLE_ANON", "120/min"),
        "user": env_str("THROTTLE_USER", "1200/min"),
    },
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 20,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "predictions.api.errors.json_exception_handler",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Stock prediction service",
    "DESCRIPTION": "Submit a stock symbol; a Celery chord of competing models predicts it.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from the drf-spectacular-sidecar wheel, not a CDN: the service works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
# Prediction requests are tiny: refuse big bodies early.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_BODY_BYTES", 16 * 1024, minimum=1024)

# --- Static files: served by whitenoise; plotly.min.js comes from the plotly wheel.
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
_plotly = find_spec("plotly")
STATICFILES_DIRS = []
if _plotly and _plotly.submodule_search_locations:
    _plotly_dir = Path(next(iter(_plotly.submodule_search_locations))) / "package_data"
    STATICFILES_DIRS.append(("vendor/plotly", str(_plotly_dir)))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
LOGIN_URL = "/admin/login/"

# --- Live pages (webui/): websockets on an ASGI server next to gunicorn, fed by one relay.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": "stockserve:asgi", "expiry": 30},
    }
}
WS_PORT = env_int("WS_PORT", PORT + 1, minimum=1)
# Where pages open websockets: unset = same host as the page, port WS_PORT; "/" = same
# origin (a proxy routes /ws/); or an absolute ws:// or wss:// base URL.
WEBSOCKET_URL = env_str("WEBSOCKET_URL")
DASHBOARD_TICK_SECONDS = env_float("DASHBOARD_TICK_SECONDS", 0.25, minimum=0.05)
DASHBOARD_WINDOW = env_int("DASHBOARD_WINDOW", 500, minimum=10)
METRICS_TOKEN = env_str("METRICS_TOKEN")  # when set, /metrics wants "Authorization: Bearer …"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}

# A pool child imports TensorFlow at start-up (~3 s): give it time to report in.
CELERY_WORKER_PROC_ALIVE_TIMEOUT = 60
