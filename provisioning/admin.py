from django.contrib import admin

from provisioning.models import ProvisioningRun


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
