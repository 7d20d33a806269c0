# syntax=docker/dockerfile:1
# A raftcron node image built from source: a static binary on an empty base.
# Releases use deploy/docker/Dockerfile.release instead (`make image`), which
# copies a binary built outside the image and needs no network inside the build.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -tags hashicorpmetrics \
      -ldflags "-s -w -X main.version=${VERSION}" -o /out/raftcron ./cmd/node \
 && mkdir -p /out/data

FROM scratch
# Time zones are embedded in the binary (time/tzdata); webhooks over HTTPS
# need the CA bundle.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/raftcron /raftcron
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
# 7001: Raft and gRPC on one port; 8001: HTTP ops (/livez /readyz /status /metrics).
EXPOSE 7001 8001
ENV RAFTCRON_DATA_DIR=/data
# No HEALTHCHECK: a scratch image has no shell or curl; orchestrators probe
# /livez and /readyz on the ops port instead.
ENTRYPOINT ["/raftcron", "serve"]
