# Generated from launch/process_catalog.py by `make generate`; edit that, not this.
# Three images from one file, each only its virtualenv and the code (docs/operating.md,
# "Running it with Docker"):
#   --target web         gunicorn, websockets, migrations, beat, relay, sweeper, stream:
#                        no TensorFlow
#   --target worker      the Celery workers, with tensorflow-cpu==2.21.0 (the default)
#   --target worker-gpu  the same with tensorflow[and-cuda]==2.21.0 (built on demand only)
# BASE: any Debian-like image with Python 3.11 (python3, its venv module) and
# ca-certificates: the official python:3.11-slim, or a stand-in (make compose-check).
ARG BASE=python:3.11-slim

FROM ${BASE} AS build-web
# PEM certificates for a proxy that re-signs HTTPS, trusted by pip in the build stages only:
# no image below copies them, and no RUN of theirs names this argument.
ARG EXTRA_CA_CERTS=""
RUN if [ -n "$EXTRA_CA_CERTS" ]; then \
      printf '%s\n' "$EXTRA_CA_CERTS" > /usr/local/share/ca-certificates/build-extra.crt \
      && update-ca-certificates; fi
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
COPY requirements.txt /src/
COPY clients/python /src/clients/python
RUN grep -v '^tensorflow==' /src/requirements.txt > /src/requirements-web.txt \
    && python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install -r /src/requirements-web.txt /src/clients/python

FROM ${BASE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH
RUN useradd --create-home app \
    && mkdir -p /app/var /run/stockserve && chown app /app/var /run/stockserve
WORKDIR /app
EXPOSE 8000 8001

FROM runtime AS web
# No TensorFlow here, and no process of this image runs a model: the check that a deep
# model's Keras backend is installed (predictions.E004) is the worker image's.
ENV SILENCED_SYSTEM_CHECKS=predictions.E004
COPY --from=build-web /opt/venv /opt/venv
COPY . .
USER app
CMD ["python", "-m", "gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "2", "--threads", "8", "--graceful-timeout", "5"]

# TensorFlow's C++ headers (430 MB) serve only to build custom ops: not kept.
FROM build-web AS build-worker
RUN /opt/venv/bin/pip install tensorflow-cpu==2.21.0 \
    && rm -rf /opt/venv/lib/python3*/site-packages/tensorflow/include

FROM runtime AS worker
COPY --from=build-worker /opt/venv /opt/venv
COPY . .
USER app
CMD ["python", "manage.py", "start_worker", "--name", "cpu", "--queues", "cpu", "--concurrency", "2", "--gpu", "auto", "--loglevel", "INFO"]

FROM build-web AS build-worker-gpu
RUN /opt/venv/bin/pip install "tensorflow[and-cuda]==2.21.0" \
    && rm -rf /opt/venv/lib/python3*/site-packages/tensorflow/include

FROM runtime AS worker-gpu
COPY --from=build-worker-gpu /opt/venv /opt/venv
COPY . .
USER app
CMD ["python", "manage.py", "start_worker", "--name", "cpu", "--queues", "cpu", "--concurrency", "2", "--gpu", "auto", "--loglevel", "INFO"]
