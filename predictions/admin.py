from django.contrib import admin

from predictions.models import PredictionRequest


@admin.register(PredictionRequest)
class PredictionRequestAdmin(admin.ModelAdmin):
    list_display = ("id", "symbol", "horizon", "strategy", "status", "created_at")
    list_filter = ("status", "strategy")
    search_fields = ("symbol", "id")
    readonly_fields = [f.name for f in PredictionRequest._meta.fields]
