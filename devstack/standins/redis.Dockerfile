# A stand-in for redis:7-alpine from Debian's redis-server (7.0), for a machine that reaches
# Debian's packages but no image registry (make compose-check). docker-compose.yml gives
# the command; this gives what it expects: redis-server, redis-cli, sha256sum and a /data
# that the redis user owns.
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* && mkdir /data && chown redis:redis /data
WORKDIR /data
USER redis
CMD ["redis-server", "--dir", "/data"]
