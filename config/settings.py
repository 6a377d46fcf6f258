"""Project settings: everything comes from environment variables (see README)."""

from __future__ import annotations

import os
import secrets
from importlib.util import find_spec
from pathlib import Path

import dj_database_url

from config.env import (
    ImproperlyConfiguredEnv,
    env_bool,
    env_choice,
    env_date,
    env_fault,
    env_float,
    env_hang,
    env_int,
    env_latency,
    env_list,
    env_str,
    weak_secret,
)
from launch import stack_file
from launch.private_files import owner_only_dir, owner_only_sqlite

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))
owner_only_dir(VAR_DIR)  # the database, secrets: 0700 however it was made (private_files.py)


def _secret(name: str, length: int = 50) -> str:
    """NAME (or NAME_FILE) from the environment, else a value generated once into var/,
    created readable by its owner only."""
    value = env_str(name)
    if value:
        return value
    path = VAR_DIR / name.lower()
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(secrets.token_urlsafe(length))
    return path.read_text(encoding="utf-8").strip()


SECRET_KEY = _secret("SECRET_KEY")
DEBUG = env_bool("DEBUG", False)
# Django's system checks to skip, comma-separated: the Docker web image (no TensorFlow,
# no model runs there) skips predictions.E004 (docs/operating.md, "Running it with Docker").
SILENCED_SYSTEM_CHECKS = env_list("SILENCED_SYSTEM_CHECKS", [])
# `production` behind an HTTPS proxy: secure cookies, HSTS and the redirect to HTTPS, so
# `manage.py check --deploy` is clean. The proxy must send X-Forwarded-Proto.
DEPLOYMENT = env_choice("DEPLOYMENT", "development", ("development", "production"))
if DEPLOYMENT == "production" and weak_secret(SECRET_KEY):
    # Anyone who knows the key forges sessions, password resets and signed values.
    raise ImproperlyConfiguredEnv(
        "SECRET_KEY is an example or too weak for DEPLOYMENT=production: set at least 40 "
        "random characters (for instance python -c 'import secrets; "
        "print(secrets.token_urlsafe(50))'), or leave it unset to have one generated."
    )
if DEPLOYMENT == "production":
    SECURE_SSL_REDIRECT = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
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
    "registry",
    "marketdata",
    "market",
    "streams",
    "batch",
    "workers",
    "api",
    "provisioning",
    "webui",
]

MIDDLEWARE = [
    "plumbing.log_context.RequestIdMiddleware",
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

# --- make run's stack (launch/stack_file.py): with no Redis named in the environment, a
# command in another shell takes the URLs the running launcher gave its processes, never
# whatever answers on 127.0.0.1:6379 (REDIS_SOURCE says which; commands that use Redis
# refuse to start without either, plumbing/redis_required.py). Production names its own.
if DEPLOYMENT == "production" and not env_str("REDIS_URL"):
    raise ImproperlyConfiguredEnv(
        "REDIS_URL is unset: DEPLOYMENT=production takes its Redis servers from the "
        "environment only (REDIS_URL, and QUEUE_REDIS_URL for the stream clients)."
    )
_STACK = {} if env_str("REDIS_URL") else stack_file.running(VAR_DIR)
REDIS_SOURCE = "environment" if env_str("REDIS_URL") else "make run" if _STACK else ""


def _url(name: str, default: str = "") -> str:
    """NAME from the environment, else the running stack's (when the environment names
    no Redis at all), else `default`."""
    return env_str(name) or _STACK.get(name, "") or default


# --- Database: SQLite under var/ by default, PostgreSQL (or any) through DATABASE_URL.
DATABASE_URL = _url("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
# Connections live 60 s across requests and tasks; a health check first replaces one the
# server closed meanwhile (a PostgreSQL restart, an idle timeout) instead of failing the request.
# SQLite's too: a new one cost a task 0.8 ms of CPU (its PRAGMAs and Django's functions), and
# a question opens about ten.
DATABASES = {
    "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
}
# PostgreSQL: parameters bound by the server and a statement prepared on its connection
# from its second use, so the server parses and plans it once per connection, not per
# request (a warm request's PostgreSQL CPU 0.64-0.81x). Django leaves it off for poolers:
# DATABASE_PREPARED_STATEMENTS=0 behind one that cannot keep prepared statements.
PREPARE_AFTER = 2
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool(
    "DATABASE_PREPARED_STATEMENTS", True
):
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True, prepare_threshold=PREPARE_AFTER
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while a worker writes; IMMEDIATE avoids lock upgrades.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not :memory:, so the Celery worker started by the tests sees the same data.
    # TEST_SQLITE_NAME differs per test run, so parallel runs do not share a file.
    _test_db = env_str("TEST_SQLITE_NAME", "test-db.sqlite3")
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / _test_db)}
    # Tokens, sessions, password hashes: the file 0600 before SQLite makes it 0644.
    if str(DATABASES["default"]["NAME"]) not in ("", ":memory:"):
        owner_only_sqlite(Path(DATABASES["default"]["NAME"]))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# A connection that finished a web request or a task without an error this recently is not
# health-checked again before the next (plumbing/db_health.py); 0 checks before every one.
DB_HEALTH_CHECK_SECONDS = env_float("DB_HEALTH_CHECK_SECONDS", 5.0, minimum=0.0)

# --- Redis, by role, each on its own URL when set (docs/configuration.md, "Redis by role").
# REDIS_URL: the project's own keys (plumbing.redis_client.get_redis) and the Django
# cache; the broker, the result backend, the channel layer (below) and the stream interface
# (QUEUE_REDIS_URL) default to it.
REDIS_URL = _url("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "stockserve",
        "TIMEOUT": 300,
        "OPTIONS": {
            "serializer": "config.cache.JSONSerializer",  # never pickle (config/cache.py)
            "socket_timeout": 5,  # an unreachable Redis must not hang a request thread
            "socket_connect_timeout": 2,
        },
    }
}

# --- Prediction service.
PREDICTION_CACHE_TTL = env_int("PREDICTION_CACHE_TTL", 900, minimum=0)
# Each web process keeps the cached answers it served in memory, told of every change by
# Redis (client-side caching, api/answer_memory.py), and counts askers from leased blocks of
# their rate-limit windows (predictions/rate_leases.py): an answer without a round trip.
# Off: one Redis round trip per cached answer.
ANSWER_MEMORY = env_bool("ANSWER_MEMORY", True)
PREDICTION_TIMEOUT = env_int("PREDICTION_TIMEOUT", 300, minimum=10)
# The latency objective of a chord request (predictions/stragglers.py): this many seconds after
# the models' chord is launched, the request is answered with the models that finished,
# the others named as late (their runs still reach the registry). A cold request of every
# model takes 3-11 s on a 2-core machine with an idle worker (docs/pipeline.md).
PREDICTION_OBJECTIVE_SECONDS = env_float("PREDICTION_OBJECTIVE_SECONDS", 30.0, minimum=0.5)
PREDICTION_MODELS = env_list("PREDICTION_MODELS", ["naive", "ridge", "arima", "lstm", "tcn"])
PREDICTION_MAX_WAIT = env_int("PREDICTION_MAX_WAIT", 60, minimum=0)
# Requests one web process holds open with ?wait= at once (each holds a thread); beyond,
# 503 with Retry-After, and clients follow the websocket or poll.
PREDICTION_MAX_WAITERS = env_int("PREDICTION_MAX_WAITERS", 4, minimum=1)
# Anonymous clients may ask for fresh runs and retraining (load experiments on a private
# stack); off by default, since those are the most expensive requests there are.
ANONYMOUS_FRESH_RUNS = env_bool("ANONYMOUS_FRESH_RUNS", False)
# API tokens older than this are refused (`manage.py create_api_token NAME --rotate`).
TOKEN_TTL_DAYS = env_int("TOKEN_TTL_DAYS", 90, minimum=1)
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
# Batching of the deep models' forward passes in a worker (predictions/deep_batching.py,
# forecasting/batching.py): the latency objective AIMD sizes batches under.
# 0 turns batching off (each request its own forward pass). A model stage waits on a
# forward pass at most TASK_SOFT_TIME_LIMIT seconds.
DEEP_BATCH_OBJECTIVE_MS = env_float("DEEP_BATCH_OBJECTIVE_MS", 100.0, minimum=0.0)
# How long a batch may wait to fill before it leaves (never past the objective). 0: a batch
# is what queued while the one before ran, so a quiet worker answers at once.
DEEP_BATCH_MAX_WAIT_MS = env_float("DEEP_BATCH_MAX_WAIT_MS", 0.0, minimum=0.0)
# A worker's pool (`manage.py start_worker --pool`): auto runs a GPU worker's tasks as
# threads of one process (one copy of each network on the device, forward passes batched
# across requests), any other worker's as prefork processes.
WORKER_POOL = env_choice("WORKER_POOL", "auto", ("auto", "prefork", "threads"))
# Shadow generations (registry/generations.py): a generation of a new recipe (changed
# model code or settings) is computed and scored beside the serving one, never served, and
# promoted only when the daily evidence says it is better (5 % error, however often
# judged); refits of the serving recipe serve at once. Off: the newest generation serves
# as soon as it is trained.
REGISTRY_SHADOW = env_bool("REGISTRY_SHADOW", True)

# Admission control (predictions/admission.py): pipelines queued or running at once.
# 0 derives the bound from the live workers: ADMISSION_PER_PROCESS per model process.
ADMISSION_MAX_IN_FLIGHT = env_int("ADMISSION_MAX_IN_FLIGHT", 0, minimum=0)
ADMISSION_PER_PROCESS = env_int("ADMISSION_PER_PROCESS", 4, minimum=1)
ADMISSION_CLIENT_SHARE = env_float("ADMISSION_CLIENT_SHARE", 0.5, minimum=0.01)
# While identified clients (tokens, stream clients, batch, the watchlist) hold or ask for
# places, all anonymous clients together hold at most this fraction of the admission places
# and of the ?wait slots (predictions/admission.py); alone they may use every place.
ADMISSION_ANONYMOUS_SHARE = env_float("ADMISSION_ANONYMOUS_SHARE", 0.5, minimum=0.01)
# Retry-After when nothing finished in the last minute to measure a drain rate from.
ADMISSION_RETRY_AFTER_IDLE = env_int("ADMISSION_RETRY_AFTER_IDLE", 5, minimum=1)
# Questions in flight one client may follow (join) at once; beyond, 429 (predictions/follows.py).
JOIN_MAX_PER_CLIENT = env_int("JOIN_MAX_PER_CLIENT", 20, minimum=1)
# Finished requests are deleted this many days after their deadline, in batches, by the
# sweeper every PREDICTION_PRUNE_SECONDS; what forecasts of record use stays
# (predictions/retention.py).
PREDICTION_RETENTION_DAYS = env_float("PREDICTION_RETENTION_DAYS", 7.0, minimum=0.0)
PREDICTION_PRUNE_SECONDS = env_float("PREDICTION_PRUNE_SECONDS", 60.0, minimum=1.0)
PREDICTION_PRUNE_BATCH = env_int("PREDICTION_PRUNE_BATCH", 1000, minimum=1)

# --- Celery (https://docs.celeryq.dev/en/stable/userguide/configuration.html).
# The broker's Redis: Celery's queues, bindings and unacknowledged messages; of ours only
# the epoch marker (plumbing.redis_client.epoch); workers/queue_wait.py reads the queues
# there. The result backend's: task results and chord counters, the most bytes of any role.
CELERY_BROKER_URL = _url("CELERY_BROKER_URL") or REDIS_URL
CELERY_RESULT_BACKEND = _url("CELERY_RESULT_BACKEND") or REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# A task's result is read only by its chord's callback, within the request's deadline (the
# finished prediction lives in the database). An hour of them held ~180 MB of Redis in a
# 30-minute soak (lab/records/benchmarks.md; the soak was retired).
CELERY_RESULT_EXPIRES = PREDICTION_TIMEOUT + 60
# Redelivery of unacknowledged messages: keep this above the hard time limit.
# A task's limits, the broker's redelivery and a request's deadline must nest (checked
# at start-up, predictions/checks.py): soft < hard limit < visibility timeout < deadline,
# so a task lost with its worker is redelivered, and can finish, before its request fails.
CELERY_TASK_SOFT_TIME_LIMIT = env_int("TASK_SOFT_TIME_LIMIT", 90, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("TASK_TIME_LIMIT", 120, minimum=2)
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 150, minimum=3)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes every database connection before and after each task unless
# this is set; then it closes them every 1,000 tasks, and between tasks a worker applies
# Django's own rule instead (workers.lifecycle: CONN_MAX_AGE and the health check), so a
# task does not open a new PostgreSQL connection (about two thirds of a cold request's
# PostgreSQL CPU when it did: docs/scaling.md).
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_DEFAULT_QUEUE = "cpu"
# Each task's queue when sent without one: a router function, named (not imported) here.
CELERY_TASK_ROUTES = ("predictions.signatures.route_task",)
# No task events: nothing in the service reads them (presence has its own heartbeats),
# and they were three publishes per task on the shared Redis. To watch tasks with
# `celery events` or Flower, turn them on for a while: `celery -A config control
# enable_events` (and `disable_events` after).
CELERY_WORKER_SEND_TASK_EVENTS = False
# --- Hybrid precompute (market/watchlist.py): these questions are answered before anyone
# asks, refreshed when new bars arrive and every PRECOMPUTE_EVERY seconds, as a client of
# admission control and of the broker's queues like the others. Empty symbols: off.
PRECOMPUTE_SYMBOLS = env_list("PRECOMPUTE_SYMBOLS", ["AAPL", "MSFT", "GOOG"])
PRECOMPUTE_HORIZONS = [
    int(h) for h in env_list("PRECOMPUTE_HORIZONS", ["5"]) if h.strip().isdigit()
]
PRECOMPUTE_EVERY = env_int("PRECOMPUTE_EVERY", 600, minimum=1)
PRECOMPUTE_CHECK_SECONDS = env_int("PRECOMPUTE_CHECK_SECONDS", 20, minimum=1)
PRECOMPUTE_MAX_IN_FLIGHT = env_int("PRECOMPUTE_MAX_IN_FLIGHT", 2, minimum=1)
# The watchlist asks nothing while a worker its questions need is still warming up, for at
# most this long; deferred at start-up, the refresh looks again every RECHECK seconds.
PRECOMPUTE_WARM_UP_WAIT_SECONDS = env_int("PRECOMPUTE_WARM_UP_WAIT_SECONDS", 120, minimum=0)
PRECOMPUTE_WARM_UP_RECHECK_SECONDS = env_int("PRECOMPUTE_WARM_UP_RECHECK_SECONDS", 2, minimum=1)
# --- The market clock (marketdata/market_clock.py): `live` follows the wall clock and the
# providers' new bars; `replay` serves the offline sample only up to the clock's date and
# moves one trading day every REPLAY_SECONDS_PER_DAY (while running), so served forecasts
# mature and are scored offline. `make run` starts a replay unless MARKET_CLOCK is set.
MARKET_CLOCK = env_choice("MARKET_CLOCK", "live", ("live", "replay"))
REPLAY_START = env_date("REPLAY_START", "2012-11-01")
REPLAY_END = env_date("REPLAY_END", "2018-12-31")
REPLAY_SECONDS_PER_DAY = env_float("REPLAY_SECONDS_PER_DAY", 10.0, minimum=0.1)
REPLAY_AUTOSTART = env_bool("REPLAY_AUTOSTART", True)
# How often beat looks at a replay's clock: seconds.
CLOCK_CHECK_SECONDS = env_float("CLOCK_CHECK_SECONDS", 1.0, minimum=0.1)
# A fault injected on purpose (predictions/faults.py), `model:bias:date` such as
# ridge:0.03:2012-09-04: for the tests and `make -C lab replay` only, so refused outside a replay
# and in production.
FAULT_INJECTION = env_fault("FAULT_INJECTION")
if FAULT_INJECTION and (MARKET_CLOCK != "replay" or DEPLOYMENT == "production"):
    raise ImproperlyConfiguredEnv(
        "FAULT_INJECTION tampers with forecasts: it is allowed only with MARKET_CLOCK=replay "
        "outside production."
    )
# A model made to hang on purpose, `model:seconds` (ridge:5), before it runs
# (predictions/faults.py): for the tests of the latency objective only, under the same guard.
FAULT_HANG = env_hang("FAULT_HANG")
if FAULT_HANG and (MARKET_CLOCK != "replay" or DEPLOYMENT == "production"):
    raise ImproperlyConfiguredEnv(
        "FAULT_HANG holds a model back on purpose: it is allowed only with MARKET_CLOCK=replay "
        "outside production."
    )
# Forecasts of record (market/track_record.py): each scoring run scores at most this
# many forecasts (bounded work per new bar); records older than this many days are deleted.
SCORE_BATCH = env_int("SCORE_BATCH", 500, minimum=1)
FORECAST_RECORD_DAYS = env_int("FORECAST_RECORD_DAYS", 400, minimum=1)
# Track records computed once per version of their records, per web process, within this
# many MiB (0: no cache) and seconds (market/track_record_cache.py).
TRACK_RECORD_CACHE_MB = env_float("TRACK_RECORD_CACHE_MB", 32.0, minimum=0.0)
TRACK_RECORD_CACHE_SECONDS = env_int("TRACK_RECORD_CACHE_SECONDS", 600, minimum=1)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = (
    {
        "refresh-watchlist": {
            "task": "workers.tasks.refresh_watchlist",
            "schedule": PRECOMPUTE_CHECK_SECONDS,
            "options": {"queue": "io", "expires": PRECOMPUTE_CHECK_SECONDS},
        }
    }
    if PRECOMPUTE_SYMBOLS and PRECOMPUTE_HORIZONS
    else {}
)
# A replay's day lasts seconds; a live day's new bars are looked for once a minute.
_CLOCK_EVERY = CLOCK_CHECK_SECONDS if MARKET_CLOCK == "replay" else 60.0
CELERY_BEAT_SCHEDULE["follow-market-clock"] = {
    "task": "workers.market.follow_clock",
    "schedule": _CLOCK_EVERY,
    "options": {"queue": "scoring", "expires": max(1.0, _CLOCK_EVERY)},
}
# The sweeper (`manage.py sweep_predictions --every SWEEP_INTERVAL`, its own process, so no
# queue backlog can delay it): re-dispatches requests whose pipeline vanished, fails those
# past their deadline.
SWEEP_INTERVAL = env_int("SWEEP_INTERVAL", 10, minimum=1)
# A request with no stage started or finished for this long is looked for in the broker;
# with no message left (a message dropped, its Redis lost) it is dispatched again, at most
# PREDICTION_ATTEMPTS times (predictions/recovery.py).
PREDICTION_STALL_SECONDS = env_int("PREDICTION_STALL_SECONDS", 60, minimum=1)
PREDICTION_ATTEMPTS = env_int("PREDICTION_ATTEMPTS", 3, minimum=1)
WORKER_GPU = env_str("WORKER_GPU", "auto")  # auto | on | off
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 5, minimum=1)
# A pool process is replaced once it holds more than this much resident memory (0: never),
# not after a number of tasks: a replaced process warms up again before its next task, and
# on a one-process pool every request waits for it (docs/scaling.md, the periodic spikes).
WORKER_MAX_MEMORY_MB = env_int("WORKER_MAX_MEMORY_MB", 2048, minimum=0)
# The niceness a worker consuming `spare` (anonymous and background questions,
# predictions/lanes.py) runs at: CFS gives a nice-10 process about 1/9 of a nice-0 one's share
# of a busy core, and all of an idle one.
SPARE_WORKER_NICE = env_int("SPARE_WORKER_NICE", 10, minimum=0)
# While the usual lane is at work, a spare-lane task starts once the work that is not niced
# leaves SPARE_YIELD_FREE_CORES idle, and its training waits again between epochs, at most
# SPARE_YIELD_SECONDS in all (0: it never waits): a lower priority alone still delayed the
# questions' stages (workers/yielding.py).
SPARE_YIELD_SECONDS = env_float("SPARE_YIELD_SECONDS", 10.0, minimum=0.0)
SPARE_YIELD_FREE_CORES = env_float("SPARE_YIELD_FREE_CORES", 1.5, minimum=0.0)
# Pool autoscaling inside a machine (`--autoscale=max,min` on a worker): Celery's own
# autoscaler, but it grows only by as many processes as free memory holds (a cpu or gpu pool
# process with TensorFlow costs ~0.5 GB), keeping WORKER_MEMORY_RESERVE_MB free.
CELERY_WORKER_AUTOSCALER = "workers.pool_autoscale:MemoryAwareAutoscaler"
WORKER_PROCESS_MB = env_int("WORKER_PROCESS_MB", 600, minimum=1)
WORKER_MEMORY_RESERVE_MB = env_int("WORKER_MEMORY_RESERVE_MB", 1024, minimum=0)
# Autoscaling across machines (provisioning/autoscale/, `manage.py autoscale`): workers
# are added while a queue's p95 wait stays above the target for AUTOSCALE_UP_DELAY s, and
# one that the controller added is drained and removed once the queue stays idle for
# AUTOSCALE_DOWN_DELAY s; AUTOSCALE_COOLDOWN s between two changes to one queue.
AUTOSCALE = env_bool("AUTOSCALE", False)  # `make run` starts the controller when on
AUTOSCALE_BACKEND = env_choice("AUTOSCALE_BACKEND", "local", ("local", "ansible"))
# queue=min-max, the workers consuming that queue (those the operator started count too).
AUTOSCALE_WORKERS = env_str("AUTOSCALE_WORKERS", "io=1-3,cpu=1-3")
AUTOSCALE_TARGET_WAIT = env_float("AUTOSCALE_TARGET_WAIT", 1.0, minimum=0.01)
AUTOSCALE_UP_DELAY = env_float("AUTOSCALE_UP_DELAY", 5.0, minimum=0.0)
AUTOSCALE_DOWN_DELAY = env_float("AUTOSCALE_DOWN_DELAY", 60.0, minimum=0.0)
AUTOSCALE_COOLDOWN = env_float("AUTOSCALE_COOLDOWN", 15.0, minimum=0.0)
AUTOSCALE_INTERVAL = env_float("AUTOSCALE_INTERVAL", 1.0, minimum=0.1)
# Seconds after taking the lead before the first decision: workers started alongside the
# controller (`make run`) need that long to send their first heartbeat.
AUTOSCALE_SETTLE = env_float("AUTOSCALE_SETTLE", 30.0, minimum=0.0)
# Pool processes of each worker the local backend starts.
AUTOSCALE_LOCAL_CONCURRENCY = env_int("AUTOSCALE_LOCAL_CONCURRENCY", 1, minimum=1)
# The ansible backend's standby pool: inventory worker hosts it may add, in this order.
AUTOSCALE_STANDBY_HOSTS = env_list("AUTOSCALE_STANDBY_HOSTS", [])
# Threads TensorFlow uses in each pool process (0 = TensorFlow's default, all cores): one
# per process keeps concurrent deep models from fighting over the cores.
WORKER_TF_THREADS = env_int("WORKER_TF_THREADS", 1, minimum=0)
# Ansible inventories for `manage.py workers` and the workers page (comma-separated paths).
PROVISIONING_INVENTORY = env_list(
    "PROVISIONING_INVENTORY", [str(BASE_DIR / "playbooks" / "inventory" / "example.yml")]
)
# How long a process trusts its answer to "is a gpu worker alive?" (routing, seconds).
ROUTING_CACHE_SECONDS = env_float("ROUTING_CACHE_SECONDS", 5.0, minimum=0.0)
# How long a process keeps model health's demotions and which price snapshots exist
# (plumbing/lookup_cache.py): a change made elsewhere shows here within this time.
LOOKUP_CACHE_SECONDS = env_float("LOOKUP_CACHE_SECONDS", 5.0, minimum=0.0)

# --- Scheduling strategies (predictions/strategies/): default, and the cascade's thresholds.
# Checked against the strategies at start-up (predictions/checks.py).
DEFAULT_STRATEGY = env_str("DEFAULT_STRATEGY", "chord")
# The cascade runs the deep models when the cheap ones' day-h forecasts spread more than
# this fraction of the combined value, or their backtest MASE is not below CASCADE_MAX_MASE.
CASCADE_MAX_SPREAD = env_float("CASCADE_MAX_SPREAD", 0.02, minimum=0.0)
CASCADE_MAX_MASE = env_float("CASCADE_MAX_MASE", 1.0, minimum=0.0)

# --- REST API.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.tokens.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    # Fixed windows in Redis, one INCR per request (api/throttles.py).
    "DEFAULT_THROTTLE_CLASSES": [
        "api.throttles.AnonymousThrottle",
        "api.throttles.UserThrottle",
    ],
    # Proxies in front that append to X-Forwarded-For; 0 trusts only the socket's address,
    # so a client cannot pick its own throttle key.
    "NUM_PROXIES": env_int("NUM_PROXIES", 0, minimum=0),
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("THROTTLE_ANON", "120/min"),
        "user": env_str("THROTTLE_USER", "1200/min"),
        # Fresh runs and retraining (use_cache/warm_start false), per account.
        "expensive": env_str("THROTTLE_EXPENSIVE", "30/min"),
        # Admin sign-in attempts, per address.
        "login": env_str("THROTTLE_LOGIN", "10/min"),
    },
    "DEFAULT_PAGINATION_CLASS": "api.query.OneValuePagination",  # ?page= once, else 400
    "PAGE_SIZE": 20,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.errors.json_exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "api.parsers.SafeJSONParser",  # DRF's, with too-deep nesting a 400
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
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
    # Operation ids stay named after /api/ paths now that /v1/models/ sits at the root.
    "SCHEMA_PATH_PREFIX": "/api/",
    # 401, 414 (gunicorn's request-line limit), 429 on every operation (api/schema_docs.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema_docs.document_every_operations_statuses",
    ],
}
# TF Serving's REST API (api/tfserving/): how long a :predict call waits for the pipeline,
# and how many instances one call may carry.
TFSERVING_MAX_WAIT = env_int("TFSERVING_MAX_WAIT", 30, minimum=1)
TFSERVING_MAX_INSTANCES = env_int("TFSERVING_MAX_INSTANCES", 32, minimum=1)
# The stream client's consumer (`manage.py serve_stream`, streams/stream_consumer.py): a
# message held this long by a consumer that stopped refreshing it is claimed by another;
# answers are kept this long per request id; the dead-letter stream keeps about this many;
# entries one consumer reads from each client's input stream per step.
QUEUE_CLAIM_IDLE = env_int("QUEUE_CLAIM_IDLE", 30, minimum=1)
QUEUE_ANSWER_TTL = env_int("QUEUE_ANSWER_TTL", 86400, minimum=60)
QUEUE_OUTPUT_MAXLEN = env_int("QUEUE_OUTPUT_MAXLEN", 10000, minimum=100)  # the dead letters
QUEUE_READ_BATCH = env_int("QUEUE_READ_BATCH", 10, minimum=1)
# The queue interface's own Redis: the client-facing streams, answers and the clients' ACL
# users, so no stream client can fill the Redis the broker, admission and the cache live in.
# Unset: the main Redis (a system check warns under DEPLOYMENT=production; docs/clients.md).
QUEUE_REDIS_URL = _url("QUEUE_REDIS_URL") or REDIS_URL
# Each stream client's bounds, enforced by the consumer (docs/clients.md, "Bounds"): bytes
# of one question's entry; questions in progress at once; entries waiting in its input
# stream (the oldest beyond are trimmed); answers kept on its output stream; consumer
# groups on it and consumers in each; MB its streams and answers may hold before it is cut
# off for QUEUE_CLIENT_COOLDOWN seconds.
QUEUE_MAX_ENTRY_BYTES = env_int("QUEUE_MAX_ENTRY_BYTES", 1024, minimum=256)
QUEUE_CLIENT_MAX_PENDING = env_int("QUEUE_CLIENT_MAX_PENDING", 8, minimum=1)
QUEUE_CLIENT_MAX_INPUT = env_int("QUEUE_CLIENT_MAX_INPUT", 1000, minimum=10)
QUEUE_CLIENT_OUTPUT_MAXLEN = env_int("QUEUE_CLIENT_OUTPUT_MAXLEN", 1000, minimum=10)
QUEUE_CLIENT_MAX_GROUPS = env_int("QUEUE_CLIENT_MAX_GROUPS", 8, minimum=1)
QUEUE_CLIENT_MAX_CONSUMERS = env_int("QUEUE_CLIENT_MAX_CONSUMERS", 16, minimum=1)
QUEUE_CLIENT_MAX_MEMORY_MB = env_int("QUEUE_CLIENT_MAX_MEMORY_MB", 32, minimum=1)
QUEUE_CLIENT_COOLDOWN = env_int("QUEUE_CLIENT_COOLDOWN", 300, minimum=1)
# Connections one stream client (in the queue's Redis) and one market reader (in the main
# Redis) may hold; the stream consumers close the newest beyond, each second.
QUEUE_CLIENT_MAX_CONNECTIONS = env_int("QUEUE_CLIENT_MAX_CONNECTIONS", 32, minimum=1)
MARKET_READER_MAX_CONNECTIONS = env_int("MARKET_READER_MAX_CONNECTIONS", 32, minimum=1)
# Deliveries (or failed attempts) of one stream entry before it goes to the dead-letter
# stream (stockserve:queue:dead) and its client is told it failed.
QUEUE_MAX_DELIVERIES = env_int("QUEUE_MAX_DELIVERIES", 5, minimum=1)
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
# The channel layer's Redis: the relay's group sends and the websockets' receives, the most
# commands of the live events.
CHANNEL_LAYER_REDIS_URL = _url("CHANNEL_LAYER_REDIS_URL") or REDIS_URL
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # Timeouts, so an unreachable Redis fails a send instead of hanging it; the read
            # timeout stays above channels_redis's 5 s blocking receive.
            "hosts": [
                {
                    "address": CHANNEL_LAYER_REDIS_URL,
                    "socket_connect_timeout": 2,
                    "socket_timeout": 10,
                }
            ],
            "prefix": "stockserve:asgi",
            "expiry": 30,
        },
    }
}
WS_PORT = env_int("WS_PORT", PORT + 1, minimum=1)
# Where pages open websockets: unset = same host as the page, port WS_PORT; "/" = same
# origin (a proxy routes /ws/); or an absolute ws:// or wss:// base URL.
WEBSOCKET_URL = env_str("WEBSOCKET_URL")
# Websockets one ASGI process keeps open at once, in all and per address (an IPv6 /64);
# beyond, the connection is closed with code 4429 or 1013 and a reason (webui/connections.py).
WS_MAX_CONNECTIONS = env_int("WS_MAX_CONNECTIONS", 1000, minimum=1)
WS_MAX_CONNECTIONS_PER_ADDRESS = env_int("WS_MAX_CONNECTIONS_PER_ADDRESS", 20, minimum=1)
DASHBOARD_TICK_SECONDS = env_float("DASHBOARD_TICK_SECONDS", 0.25, minimum=0.05)
DASHBOARD_WINDOW = env_int("DASHBOARD_WINDOW", 500, minimum=10)
# /metrics wants "Authorization: Bearer <METRICS_TOKEN>" (or a staff session); without
# METRICS_TOKEN one is generated into var/metrics_token. DEBUG leaves /metrics open.
METRICS_TOKEN = _secret("METRICS_TOKEN", 32)
METRICS_TOKEN_MIN_LENGTH = 32  # the playbooks' rule too (roles/monitoring)
if DEPLOYMENT == "production" and weak_secret(METRICS_TOKEN, METRICS_TOKEN_MIN_LENGTH):
    # A published example (vault.example.yml's) opens /metrics to anyone who read it.
    raise ImproperlyConfiguredEnv(
        "METRICS_TOKEN is an example or too weak for DEPLOYMENT=production: set at least "
        f"{METRICS_TOKEN_MIN_LENGTH} random characters (python -c 'import secrets; "
        "print(secrets.token_urlsafe(32))'), or leave it unset to have one generated."
    )

# Every line carries the prediction it belongs to ("-" for none; plumbing/log_context.py),
# so `grep <id>` follows one request through the web process, the workers and the relay.
# LOG_FORMAT=json writes one JSON object per line for a log shipper.
LOG_FORMAT = env_choice("LOG_FORMAT", "plain", ("plain", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "plumbing.log_context.RequestIdFilter"}},
    "formatters": {
        # One line per record: control characters in a message are escaped (a reason with
        # a newline cannot forge a line; config/log_format.py).
        "plain": {
            "class": "config.log_format.OneLineFormatter",
            "format": "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s",
        },
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(request_id)s %(name)s %(process)d %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
# Workers log through the configuration above (with the request id), not Celery's own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# A pool child imports TensorFlow at start-up (~3 s): give it time to report in.
CELERY_WORKER_PROC_ALIVE_TIMEOUT = 60
