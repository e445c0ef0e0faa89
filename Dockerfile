# A static kvcheck on a distroless base, run as non-root (uid 65532):
#   docker build -t kvcheck .
#   docker run --rm -v "$PWD:/src" -w /src kvcheck lint dashboards/
# The binary is the one scripts/dist.sh builds (CGO_ENABLED=0, -trimpath, the version linked
# in from the build arguments); TestDockerfileBuild runs this RUN line on the host.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=
ARG DATE=
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.buildVersion=${VERSION} -X main.buildCommit=${COMMIT} -X main.buildDate=${DATE}" -o /out/kvcheck ./cmd/kvcheck

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kvcheck /usr/local/bin/kvcheck
COPY LICENSE /usr/share/doc/kvcheck/LICENSE
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kvcheck"]
CMD ["--help"]
