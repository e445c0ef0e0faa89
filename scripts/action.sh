#!/usr/bin/env bash
# The steps of action.yml, the composite GitHub Action. Inputs come as environment variables
# (never spliced into the script, so a path with quotes or $ stays a path).
#
#   action.sh install  KVCHECK_VERSION empty: build kvcheck from the action's source
#                      (GITHUB_ACTION_PATH) with the Go that setup-go installed; else download
#                      that release's archive for the runner and check it against the
#                      release's checksums file. Puts kvcheck on GITHUB_PATH.
#   action.sh run      kvcheck lint on KVCHECK_PATHS with the log and annotations on standard
#                      output, SARIF to KVCHECK_SARIF, the step summary (GITHUB_STEP_SUMMARY)
#                      written by kvcheck itself; sets the sarif-file and exit-code outputs and
#                      exits with kvcheck's code.
set -euo pipefail

install() {
	local dir=${RUNNER_TEMP:-/tmp}/kvcheck-bin
	mkdir -p "$dir"
	if [ -z "${KVCHECK_VERSION:-}" ]; then
		(cd "${GITHUB_ACTION_PATH:?}" && CGO_ENABLED=0 go build -o "$dir/kvcheck" ./cmd/kvcheck)
	else
		local v=${KVCHECK_VERSION#v} os arch
		case "${RUNNER_OS:-Linux}" in Linux) os=linux ;; macOS) os=darwin ;; *) echo "kvcheck: no release for ${RUNNER_OS}; leave version empty to build from source" >&2; exit 2 ;; esac
		case "${RUNNER_ARCH:-X64}" in X64) arch=amd64 ;; ARM64) arch=arm64 ;; *) echo "kvcheck: no release for ${RUNNER_ARCH}" >&2; exit 2 ;; esac
		local base=https://github.com/kvcheck/kvcheck/releases/download/v$v name=kvcheck_${v}_${os}_${arch}.tar.gz
		curl -fsSL -o "$dir/$name" "$base/$name"
		curl -fsSL -o "$dir/checksums.txt" "$base/kvcheck_${v}_checksums.txt"
		(cd "$dir" && grep "  $name\$" checksums.txt | sha256sum -c -)
		tar -xzf "$dir/$name" -C "$dir" kvcheck
	fi
	"$dir/kvcheck" version
	if [ -n "${GITHUB_PATH:-}" ]; then
		echo "$dir" >> "$GITHUB_PATH"
	fi
}

run() {
	local sarif=${KVCHECK_SARIF:-kvcheck.sarif}
	local args=(lint -o text -o github -o "sarif=$sarif")
	# An input left empty is not passed: the kvcheck config (.kvcheck.yaml) then decides.
	if [ -n "${KVCHECK_FAIL_ON:-}" ]; then
		args+=(--fail-on "$KVCHECK_FAIL_ON")
	fi
	if [ -n "${KVCHECK_CONFIG:-}" ]; then
		args+=(--config "$KVCHECK_CONFIG")
	fi
	if [ -n "${KVCHECK_TARGETS:-}" ]; then
		args+=(--target "$KVCHECK_TARGETS")
	fi
	if [ -n "${KVCHECK_BASELINE:-}" ]; then
		args+=(--baseline "$KVCHECK_BASELINE")
	fi
	# One path a line when the input has several lines (a path may then hold spaces), else
	# separated by spaces.
	local paths=() p
	if [[ "${KVCHECK_PATHS:-.}" == *$'\n'* ]]; then
		while IFS= read -r p; do
			[ -n "$p" ] && paths+=("$p")
		done <<< "$KVCHECK_PATHS"
	else
		read -r -a paths <<< "${KVCHECK_PATHS:-.}"
	fi
	args+=(-- "${paths[@]}")
	local code=0
	"${KVCHECK_BIN:-kvcheck}" "${args[@]}" || code=$?
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		{ echo "sarif-file=$sarif"; echo "exit-code=$code"; } >> "$GITHUB_OUTPUT"
	fi
	exit "$code"
}

case "${1:-}" in
install) install ;;
run) run ;;
*) echo "usage: action.sh install|run" >&2; exit 2 ;;
esac
