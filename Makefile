# kvcheck: see README.md. `make demo` runs the main job on an emulated fleet; `make test` runs
# every test, installing what the integration tests need on Debian when it is missing.
GO      ?= go
BIN     ?= bin/kvcheck
# The shared corpus of real dashboards, dumps, templates and traces, when it sits beside the repo.
KVCHECK_CORPUS ?= $(abspath $(wildcard ../shared/corpus))
export KVCHECK_CORPUS

.PHONY: all build test deps lint fmt fmt-check bench fuzz demo dist clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/kvcheck

deps:
	@bash scripts/install-deps.sh

# -timeout: cmd/kvcheck's testscripts take about 4 minutes under -race on a quiet 2-core machine
# and went past go test's default 10 minutes once at load average 12-14; a slow machine is not
# a failure, a hang still is.
test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...

# golangci-lint is pinned in tools/go.mod, apart from the product's dependencies.
lint:
	$(GO) vet ./...
	cd tools && $(GO) build -o ../bin/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	bin/golangci-lint run ./...

fmt:
	gofmt -w cmd internal

fmt-check:
	@test -z "$$(gofmt -l cmd internal)" || { gofmt -l cmd internal; echo "run make fmt"; exit 1; }

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Runs every fuzz target for FUZZTIME each (about a minute each at the default; grep "^func Fuzz" for the list). The seed
# corpora are the f.Add seeds plus the files in each package's testdata/fuzz/FuzzX directory;
# what a run finds interesting stays in the Go build cache's fuzz directory, so the next run
# starts from it. FUZZMINIMIZE bounds the work spent shrinking each new interesting input, as a
# number of runs (Go's default is 60 s an input): while it minimises, the fuzzer counts no
# execs, and a time bound let a target whose runs take milliseconds (FuzzConfigFile: three
# lints of a few KB of YAML) spend nearly all its time minimising, at about 3 execs/s. A crasher
# is still minimised within the bound and written to testdata/fuzz, where it becomes a
# regression seed; FUZZMINIMIZE=60s shrinks it further.
FUZZTIME ?= 60s
FUZZMINIMIZE ?= 100x
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg || exit 1; \
	  done; \
	done

demo:
	$(GO) run ./cmd/kvcheck demo

# The four release archives (linux, darwin x amd64, arm64) and their checksums in dist/, as
# .goreleaser.yaml builds them, without goreleaser: see scripts/dist.sh.
dist:
	@bash scripts/dist.sh

clean:
	rm -rf bin dist
