"""Prometheus `/metrics`: event counters from Redis, queue depths and workers read live.

Why a custom collector instead of prometheus-client's own metric objects: the numbers are
produced in many processes (gunicorn workers, Celery pool children, the beat sweeper) on
possibly many machines. Each publisher adds to one Redis hash in the same round trip as its
event (`plumbing.event_metrics`), so any web process answers a scrape with the totals,
with no multiprocess directory to manage. Gauges are read at scrape time.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator, Mapping

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from plumbing import event_metrics
from plumbing.redis_client import get_redis
from registry.models import ModelHealth
from webui.events import system


class StockserveCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        event_metrics.flush()  # this process's own pending counts; others' are due within 1 s
        snap = event_metrics.parse(get_redis().hgetall(event_metrics.METRICS_KEY))
        yield from self._latency(snap)
        yield from self._stages(snap)
        yield from self._counters(snap)
        yield from self._batches(snap)
        yield from self._system()

    @staticmethod
    def _latency(snap: event_metrics.Snapshot) -> Iterator[Metric]:
        family = HistogramMetricFamily(
            "stockserve_prediction_latency_seconds",
            "Submit to final state of a prediction run by the pipeline.",
            labels=["outcome"],
        )
        for outcome, hist in sorted(snap.latency.items()):
            family.add_metric([outcome], list(hist.cumulative()), hist.total)
        yield family

    @staticmethod
    def _stages(snap: event_metrics.Snapshot) -> Iterator[Metric]:
        family = HistogramMetricFamily(
            "stockserve_stage_duration_seconds",
            "Duration of one pipeline stage on a worker, by stage and queue.",
            labels=["stage", "queue"],
        )
        for (stage, queue), hist in sorted(snap.stages.items()):
            family.add_metric([stage, queue], list(hist.cumulative()), hist.total)
        yield family
        errors = CounterMetricFamily(
            "stockserve_stage_errors",
            "Stages that reported an error (the prediction may still succeed without them).",
            labels=["stage", "queue"],
        )
        for (stage, queue), count in sorted(snap.stage_errors.items()):
            errors.add_metric([stage, queue], count)
        yield errors

    @staticmethod
    def _counters(snap: event_metrics.Snapshot) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "stockserve_predictions",
            "Prediction requests by event: submitted (to the pipeline), cached (answered from "
            "the cache), done, failed.",
            labels=["event"],
        )
        for event in ("submitted", "cached", "done", "failed"):
            requests.add_metric([event], snap.requests.get(event, 0))
        yield requests
        refused = CounterMetricFamily(
            "stockserve_admission_refusals",
            "Requests that needed the pipeline and were refused: busy (at capacity, 503) or "
            "over-share (the client had its share in progress, 429).",
            labels=["reason"],
        )
        for reason in ("busy", "over-share"):
            refused.add_metric([reason], snap.refused.get(reason, 0))
        yield refused
        cache = CounterMetricFamily(
            "stockserve_cache_lookups", "Result cache lookups by result.", labels=["result"]
        )
        for result in ("hit", "miss"):
            cache.add_metric([result], snap.cache.get(result, 0))
        yield cache
        yield CounterMetricFamily(
            "stockserve_prediction_errors",
            "Predictions that ended failed (deadline passed, no price data, a bug).",
            value=snap.requests.get("failed", 0),
        )

    @staticmethod
    def _batches(snap: event_metrics.Snapshot) -> Iterator[Metric]:
        rows = HistogramMetricFamily(
            "stockserve_model_batch_rows",
            "Windows per forward pass of a worker's batcher (the deep models' inference, "
            "batched across requests), by device.",
            labels=["device"],
        )
        for device, hist in sorted(snap.batches.items()):
            rows.add_metric([device], list(hist.cumulative()), hist.total)
        yield rows
        requests = CounterMetricFamily(
            "stockserve_model_batch_requests",
            "Requests (forward passes asked for) served by the batchers, by device; against "
            "the calls counted in stockserve_model_batch_rows, how many shared one.",
            labels=["device"],
        )
        late = CounterMetricFamily(
            "stockserve_model_batches_late",
            "Batcher calls whose oldest request missed DEEP_BATCH_OBJECTIVE_MS (AIMD cut the "
            "batch size after each).",
            labels=["device"],
        )
        for device in sorted(snap.batches):
            requests.add_metric([device], snap.batch_requests.get(device, 0))
            late.add_metric([device], snap.batches_late.get(device, 0))
        yield requests
        yield late

    @staticmethod
    def _system() -> Iterator[Metric]:
        depths, waits = system.queue_depths_and_waits()
        yield _per_queue("stockserve_queue_depth", "Messages waiting in a Celery queue.", depths)
        yield _per_queue(
            "stockserve_queue_wait_seconds",
            "p95 wait of a queue's tasks in the last 15 s, or its oldest message's age if larger.",
            waits,
        )
        workers = system.workers_online()
        yield GaugeMetricFamily(
            "stockserve_workers_online", "Workers with a fresh heartbeat.", value=len(workers)
        )
        yield _per_queue(
            "stockserve_queue_workers",
            "Live workers consuming a queue.",
            system.workers_per_queue(workers),
        )
        yield _per_queue(
            "stockserve_queue_processes",
            "Pool processes of the live workers consuming a queue.",
            system.processes_per_queue(workers),
        )
        tasks = CounterMetricFamily(
            "stockserve_worker_tasks", "Tasks finished per live worker.", labels=["worker"]
        )
        for worker in workers:
            tasks.add_metric([worker["hostname"]], worker["tasks_done"])
        yield tasks
        demoted = GaugeMetricFamily(
            "stockserve_model_demoted",
            "1 while model health has demoted a model for a symbol (it gets no weight).",
            labels=["symbol", "model"],
        )
        for symbol, model in ModelHealth.objects.values_list("symbol", "model").filter(
            state=ModelHealth.DEMOTED
        ):
            demoted.add_metric([symbol, model], 1)
        yield demoted


def _per_queue(name: str, documentation: str, values: Mapping[str, float]) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(name, documentation, labels=["queue"])
    for queue, value in values.items():
        gauge.add_metric([queue], value)
    return gauge


REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(StockserveCollector())


def _authorized(request: HttpRequest) -> bool:
    """The scrape's bearer token, or a staff session; anyone while DEBUG is on."""
    if settings.DEBUG:
        return True
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return True
    given = request.headers.get("Authorization", "")
    return hmac.compare_digest(given.encode(), f"Bearer {settings.METRICS_TOKEN}".encode())


@csrf_exempt  # no state changes; a POST gets a JSON 405, not Django's HTML CSRF page
def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response = JsonResponse(
            {"error": "/metrics only answers GET (a Prometheus scrape).", "status": 405},
            status=405,
        )
        response["Allow"] = "GET, HEAD"
        return response
    if not _authorized(request):
        return JsonResponse(
            {"error": "Send the metrics token as 'Authorization: Bearer <token>'.", "status": 401},
            status=401,
        )
    try:
        body = generate_latest(REGISTRY)
    except Exception as exc:
        return JsonResponse(
            {"error": f"Metrics are unavailable: {exc.__class__.__name__}.", "status": 503},
            status=503,
        )
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
