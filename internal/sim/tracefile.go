package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvcheck/kvcheck/internal/events"
)

// Trace file formats, as --format names them.
const (
	FormatAuto     = "auto"
	FormatMooncake = "mooncake"
	FormatAzure    = "azure"
)

// AzureBlockSize is the block size a lengths-only trace is cut into when none is given: vLLM's
// default block size.
const AzureBlockSize = 16

// FormatError is a trace file whose format cannot be told or is not one kvcheck reads: the
// caller's usage error. Path is empty when Format itself is unknown.
type FormatError struct {
	Path, Format string
}

func (e *FormatError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("format %q: use auto, mooncake or azure", e.Format)
	}
	return fmt.Sprintf("%s: cannot tell the format from the extension", e.Path)
}

// TraceFormat is the one rule that tells a trace file's format. A format named (mooncake,
// azure) is taken as it is; auto (or empty) goes by the extension: .jsonl, .json and .ndjson
// are Mooncake JSONL, .csv is the Azure lengths-only CSV. Anything else is a *FormatError:
// guessing would read a CSV as JSON (or the reverse) and fail on line 1 with a confusing
// message, or worse, succeed with the wrong block size.
func TraceFormat(path, format string) (string, error) {
	switch f := strings.ToLower(format); f {
	case FormatMooncake, FormatAzure:
		return f, nil
	case FormatAuto, "":
	default:
		return "", &FormatError{Format: format}
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".json", ".ndjson":
		return FormatMooncake, nil
	case ".csv":
		return FormatAzure, nil
	}
	return "", &FormatError{Path: path, Format: format}
}

// ReadTraceFile reads the trace file at path in format (see TraceFormat), in blocks of
// blockSize tokens: when 0, MooncakeBlockSize for Mooncake (its hash_ids) and AzureBlockSize
// for Azure.
func ReadTraceFile(path, format string, blockSize int) (*Trace, error) {
	return ReadTraceFileLimit(path, format, blockSize, Limits{})
}

// ReadTraceFileLimit is ReadTraceFile refusing a trace of more block references or requests
// than lim allows (--max-block-refs, --max-trace-requests): the trace is held in memory at
// about 12 bytes a reference and 88 a request.
func ReadTraceFileLimit(path, format string, blockSize int, lim Limits) (*Trace, error) {
	kind, err := TraceFormat(path, format)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	if kind == FormatMooncake {
		if blockSize == 0 {
			blockSize = MooncakeBlockSize
		}
		return readMooncake(f, path, blockSize, lim)
	}
	if blockSize == 0 {
		blockSize = AzureBlockSize
	}
	return readAzure(f, path, blockSize, lim)
}

// ReadRecordingFiles reads the kvcheck tap recordings at paths as ReadRecordings does, opening
// and closing them.
func ReadRecordingFiles(ctx context.Context, paths []string, opts RecordingOptions) (*Trace, error) {
	recs, closeAll, err := events.OpenRecordings(paths)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	return ReadRecordings(ctx, recs, opts)
}
