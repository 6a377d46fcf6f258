"""Market data's tables: the price store's rows, fetched bars persisted once and passed
between tasks by key.

Moved from the predictions app without touching the database (marketdata/migrations/0001):
the table keeps its name (``db_table``).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class PriceSnapshot(models.Model):
    """The price store: fetched bars, persisted once, passed between tasks by key."""

    key = models.CharField(max_length=64, primary_key=True)
    symbol = models.CharField(max_length=16, db_index=True)
    source = models.CharField(max_length=64)
    first_bar_date = models.DateField()
    last_bar_date = models.DateField()
    bars = models.PositiveIntegerField()
    fetched_at = models.DateTimeField(default=timezone.now)
    data = models.BinaryField()

    class Meta:
        db_table = "predictions_pricesnapshot"
        ordering = ["-fetched_at"]

    def __str__(self) -> str:
        return f"{self.symbol} from {self.source} to {self.last_bar_date}"
