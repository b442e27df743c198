# The broker's container image: a static binary in an empty image.
#
# The binary is built outside (scripts/image.sh, or GoReleaser): this file
# only COPYs it, the CA bundle and an empty data folder into `scratch`, so
# the image holds nothing but what the broker reads. Build context:
#
#   queen                 CGO_ENABLED=0 binary for the target platform
#   ca-certificates.crt   the CA bundle (TLS to PostgreSQL, JWKS)
#   data/                 an empty folder, the embedded engine's data dir
#
# Time-zone data is compiled into the binary (time/tzdata).
FROM scratch

ARG VERSION=devel
ARG REVISION=unknown
LABEL org.opencontainers.image.title="queen-go" \
      org.opencontainers.image.description="A message broker speaking Queen's HTTP/JSON API" \
      org.opencontainers.image.source="https://github.com/queen-go/queen" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"

# Go looks for the system pool here first on Linux.
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# The volume's folder belongs to the unprivileged user the broker runs as,
# so a fresh named volume is writable too (it copies this owner).
COPY --chown=65532:65532 data /data
COPY queen /queen

# With no database configured the broker runs the embedded engine on /data;
# PG_* or QUEEN_DATABASE_URL switch it to PostgreSQL.
ENV QUEEN_DATA_DIR=/data \
    QUEEN_BIND_ADDR=0.0.0.0 \
    PORT=6632
USER 65532:65532
VOLUME /data
EXPOSE 6632
ENTRYPOINT ["/queen"]
