from django.urls import path

from provisioning import views

urlpatterns = [
    path("workers/", views.workers_page, name="workers"),
    path("workers/state/", views.workers_state, name="workers-state"),
    path("workers/runs/", views.start_run, name="workers-run"),
    path("workers/runs/<int:pk>/log/", views.run_log, name="workers-run-log"),
]
