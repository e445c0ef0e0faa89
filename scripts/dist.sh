#!/usr/bin/env bash
# make dist: the release archives .goreleaser.yaml builds, without goreleaser. For each of
# linux and darwin on amd64 and arm64: a static binary (CGO_ENABLED=0, -trimpath) with its
# version, commit and date linked in, packed with LICENSE and README.md as
# dist/kvcheck_VERSION_OS_ARCH.tar.gz, and dist/kvcheck_VERSION_checksums.txt with their
# SHA-256 sums, named and laid out as goreleaser v2 names and lays out its archives.
#
# VERSION is the tag without its v (git describe; "0.0.0-devel-<commit>" without a tag), the
# date is the commit's (so the same commit builds the same bytes), and the archives hold their
# files in name order with owner 0 and the commit's time. DIST_TARGETS narrows the platforms
# (the test builds the host's only); DIST_DIR moves the output.
set -euo pipefail
cd "$(dirname "$0")/.."

commit=$(git rev-parse HEAD)
if tag=$(git describe --tags --exact-match 2>/dev/null); then
	version=${tag#v}
else
	version=0.0.0-devel-$(git log -1 --format=%h HEAD) # as goreleaser's .ShortCommit
fi
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	version=$version-dirty
fi
epoch=$(git log -1 --format=%ct HEAD)
date=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
targets=${DIST_TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
out=${DIST_DIR:-dist}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

archives=()
for t in $targets; do
	os=${t%/*} arch=${t#*/}
	name=kvcheck_${version}_${os}_${arch}
	mkdir -p "$work/$name"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X main.buildVersion=$version -X main.buildCommit=$commit -X main.buildDate=$date" \
		-o "$work/$name/kvcheck" ./cmd/kvcheck
	cp LICENSE README.md "$work/$name/"
	tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
		-C "$work/$name" -cf - LICENSE README.md kvcheck | gzip -n -9 > "$out/$name.tar.gz"
	archives+=("$name.tar.gz")
	echo "dist: $out/$name.tar.gz"
done
(cd "$out" && sha256sum "${archives[@]}" > "kvcheck_${version}_checksums.txt")
echo "dist: $out/kvcheck_${version}_checksums.txt"
