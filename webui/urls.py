from django.urls import path

from webui import dashboard, metrics, probes, views

urlpatterns = [
    path("", views.index, name="index"),
    path("track-record/", views.track_record, name="track-record-page"),
    path("dashboard/", dashboard.dashboard, name="dashboard"),
    path("loadtest/", dashboard.loadtest, name="loadtest"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
]
