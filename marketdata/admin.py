from django.contrib import admin

from marketdata.models import PriceSnapshot


@admin.register(PriceSnapshot)
class PriceSnapshotAdmin(admin.ModelAdmin):
    list_display = ("symbol", "source", "first_bar_date", "last_bar_date", "bars", "fetched_at")
    exclude = ("data",)
