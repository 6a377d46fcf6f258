from django.urls import path

from webui import dashboard, metrics, provisioning, views

urlpatterns = [
    path("", views.index, name="index"),
    path("dashboard/", dashboard.dashboard, name="dashboard"),
    path("loadtest/", dashboard.loadtest, name="loadtest"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("workers/", provisioning.workers_page, name="workers"),
    path("workers/state/", provisioning.workers_state, name="workers-state"),
    path("workers/runs/", provisioning.start_run, name="workers-run"),
    path("workers/runs/<int:pk>/log/", provisioning.run_log, name="workers-run-log"),
]
