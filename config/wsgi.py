"""WSGI entry point: gunicorn serves the HTTP API and pages through this.

Plain questions that the cache can answer are answered before Django's request handling
(`api.hotpath.CachedAnswerApp`, WhiteNoise's pattern); everything else is Django's.
"""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from api.hotpath import CachedAnswerApp  # noqa: E402 - needs Django set up
from predictions.pipeline import warm_up_dispatch  # noqa: E402

application = CachedAnswerApp(django_application)

# Import every view and prepare dispatching now (Django and Celery do both on first use),
# so a web process gunicorn just started answers its first request as fast as the next.
get_resolver().url_patterns  # noqa: B018
warm_up_dispatch()

# Everything imported so far lives as long as the process: move it out of the cyclic
# garbage collector's generations, so a full collection no longer walks it while a
# request waits (the tail of the open-loop latency).
gc.freeze()
