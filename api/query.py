"""Query parameters the API reads as one value: given more than once, a 400.

Why: Django's `QueryDict.get` silently takes the last of repeated values, so `?wait=0&wait=60`
or `?page=1&page=2` (the array form a generated client may send) were answered for a value
the client may not have meant. The schema documents each parameter as one value.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request


def one(request: Request, name: str, default: str = "") -> str:
    """The parameter's only value (`default` when absent); a 400 when given more than once."""
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise ValidationError(
            {name: [f"{name} may be given once; it was given {len(values)} times."]}
        )
    return values[0] if values else default


class OneValuePagination(PageNumberPagination):
    """DRF's page numbers, with `?page=` given more than once, or empty (DRF reads it as
    page 1), refused; a page that is not a number stays DRF's 404."""

    def get_page_number(self, request: Any, paginator: Any) -> Any:
        name = self.page_query_param
        if name in request.query_params and not one(request, name).strip():
            raise ValidationError({name: [f"{name} must be a page number such as 2."]})
        return super().get_page_number(request, paginator)
