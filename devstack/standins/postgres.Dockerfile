# A stand-in for postgres:16-alpine from Debian's PostgreSQL 15 (bookworm has no 16), for a
# machine with no image registry (make compose-check): the official image's contract that
# docker-compose.yml uses (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, PGDATA, pg_isready,
# the postgres user), nothing more.
ARG BASE
FROM ${BASE}
RUN mkdir -p /etc/postgresql-common \
    && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
    && apt-get update && apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown postgres:postgres /var/lib/postgresql/data /var/run/postgresql \
    && chmod 700 /var/lib/postgresql/data
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/
USER postgres
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
CMD ["postgres"]
