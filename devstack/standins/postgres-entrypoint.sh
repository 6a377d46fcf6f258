#!/bin/sh
# The official postgres image's first start, as far as docker-compose.yml relies on it: an
# empty $PGDATA becomes a cluster whose superuser is $POSTGRES_USER (password
# $POSTGRES_PASSWORD, required from other hosts) with a database $POSTGRES_DB.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile=$(mktemp)
    printf %s "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
    psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres \
        -c "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\""
    pg_ctl -D "$PGDATA" -m fast -w stop
fi
exec "$@" -D "$PGDATA" -c listen_addresses='*'
