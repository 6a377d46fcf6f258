"""The reference for `make -C lab bench-api`: a minimal Django project with one JSON view.

    gunicorn lab.bare_django:application   (BARE_BODY_FILE=answer.json)

No apps, no middleware, no database: one URL answering with the bytes of a cached
prediction (read once from BARE_BODY_FILE), served under the same gunicorn command line as
the service. What a cached answer costs beyond this is what the service adds to Django.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

settings.configure(
    DEBUG=False,
    SECRET_KEY="bench-only",
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=["*"],
    MIDDLEWARE=[],
    INSTALLED_APPS=[],
)
BODY = Path(os.environ["BARE_BODY_FILE"]).read_bytes() if "BARE_BODY_FILE" in os.environ else b"{}"


@csrf_exempt
def answer(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(BODY, content_type="application/json")
    response["Content-Length"] = str(len(BODY))  # as the service's cached answers have
    return response


urlpatterns = [path("api/v1/predictions/", answer)]
application = get_wsgi_application()
