# syntax=docker/dockerfile:1
# Parley as a static binary in a minimal image, running as a non-root user.
#   docker build -t parley --build-arg VERSION=$(git describe --always --dirty) .
#   docker run -p 8080:8080 -v parley-data:/data parley
# Settings are the PARLEY_* variables of `parley serve --help`
# (docker run --env-file takes the same file as the systemd unit).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# No cgo: the pure-Go SQLite driver (modernc.org/sqlite), so the binary
# needs no C library and runs on an empty base image.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION}" -o /out/parley ./cmd/parley \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/parley /usr/local/bin/parley
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV PARLEY_ADDR=0.0.0.0:8080 \
    PARLEY_DATA=/data \
    PARLEY_LOG_FORMAT=json
EXPOSE 8080
VOLUME ["/data"]
# No shell in the image: the binary checks itself (GET /healthz on
# PARLEY_ADDR, exit 0 or 1).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/parley", "healthcheck", "--timeout", "3s"]
ENTRYPOINT ["/usr/local/bin/parley"]
CMD ["serve"]
