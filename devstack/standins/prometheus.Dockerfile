# A stand-in for prom/prometheus from Debian's prometheus (2.42), for a machine with no image
# registry (make compose-check): docker-compose.yml gives the command and the storage path;
# this gives prometheus on PATH, /bin/sh and a /prometheus that nobody (65534) owns.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends prometheus \
    && rm -rf /var/lib/apt/lists/* && mkdir /prometheus && chown 65534:65534 /prometheus
USER 65534:65534
ENTRYPOINT ["prometheus"]
