from django.contrib import admin

from provisioning.models import ProvisioningRun, ScalingDecision


@admin.register(ProvisioningRun)
class ProvisioningRunAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "action",
        "host",
        "status",
        "changed",
        "failed",
        "unreachable",
        "started_at",
        "finished_at",
        "requested_by",
    )
    list_filter = ("action", "status")
    search_fields = ("host", "error")
    readonly_fields = [f.name for f in ProvisioningRun._meta.fields]


@admin.register(ScalingDecision)
class ScalingDecisionAdmin(admin.ModelAdmin):
    list_display = ("at", "queue", "action", "worker", "wait_seconds", "depth", "workers", "reason")
    list_filter = ("queue", "action", "backend")
    readonly_fields = [f.name for f in ScalingDecision._meta.fields]
