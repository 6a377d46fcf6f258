from django.contrib import admin

from predictions.models import PredictionRequest, PriceSnapshot


@admin.register(PredictionRequest)
class PredictionRequestAdmin(admin.ModelAdmin):
    list_display = ("id", "symbol", "horizon", "strategy", "status", "created_at")
    list_filter = ("status", "strategy")
    search_fields = ("symbol", "id")
    readonly_fields = [f.name for f in PredictionRequest._meta.fields]


@admin.register(PriceSnapshot)
class PriceSnapshotAdmin(admin.ModelAdmin):
    list_display = ("symbol", "source", "first_bar_date", "last_bar_date", "bars", "fetched_at")
    exclude = ("data",)
