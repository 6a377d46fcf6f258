"""The one percentile the service reports, for the dashboard and the load reports alike.

One definition, so the dashboard's p95 and a report's p95 of the same samples agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (q in 0..100), linearly interpolated between the closest ranks.

    numpy's default ("linear") definition, computed exactly from the raw samples (never
    from buckets): never above the max nor below the min. None when there are no samples.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
