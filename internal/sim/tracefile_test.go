package sim

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestTraceFormat(t *testing.T) {
	for _, tc := range []struct {
		path, format, want string
		unknown            bool // a *FormatError
	}{
		{path: "t.jsonl", format: "auto", want: FormatMooncake},
		{path: "dir.v2/T.JSON", format: "", want: FormatMooncake},
		{path: "t.ndjson", format: "auto", want: FormatMooncake},
		{path: "t.csv", format: "auto", want: FormatAzure},
		{path: "t.CSV", format: "Auto", want: FormatAzure},
		{path: "t.txt", format: "auto", unknown: true},
		{path: "trace", format: "auto", unknown: true},
		{path: "t.csv.gz", format: "auto", unknown: true},
		{path: "t.txt", format: "mooncake", want: FormatMooncake},
		{path: "t.jsonl", format: "azure", want: FormatAzure},
		{path: "t.jsonl", format: "parquet", unknown: true},
	} {
		got, err := TraceFormat(tc.path, tc.format)
		var fe *FormatError
		if tc.unknown {
			if !errors.As(err, &fe) {
				t.Errorf("TraceFormat(%q, %q) = %q, %v; want a *FormatError", tc.path, tc.format, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("TraceFormat(%q, %q) = %q, %v; want %q", tc.path, tc.format, got, err, tc.want)
		}
	}
}

func TestReadTraceFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	moon := write("m.jsonl", `{"timestamp": 0, "input_length": 1024, "output_length": 8, "hash_ids": [1, 2]}`+"\n")
	tr, err := ReadTraceFile(moon, "auto", 0)
	if err != nil || tr.BlockSize != MooncakeBlockSize || len(tr.Requests) != 1 {
		t.Fatalf("Mooncake file: %+v, %v; want one request in %d-token blocks", tr, err, MooncakeBlockSize)
	}
	az := write("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,100,10\n")
	tr, err = ReadTraceFile(az, "auto", 0)
	if err != nil || tr.BlockSize != AzureBlockSize || len(tr.Requests) != 1 {
		t.Fatalf("Azure file: %+v, %v; want one request in %d-token blocks", tr, err, AzureBlockSize)
	}
	// The rule is applied before the file is opened: an undetectable name is a format error
	// even when the file is missing.
	var fe *FormatError
	if _, err := ReadTraceFile(filepath.Join(dir, "missing.txt"), "auto", 0); !errors.As(err, &fe) {
		t.Errorf("missing.txt: err = %v, want a *FormatError", err)
	}
	if _, err := ReadTraceFile(filepath.Join(dir, "missing.jsonl"), "auto", 0); err == nil || errors.As(err, &fe) {
		t.Errorf("missing.jsonl: err = %v, want an open error", err)
	}
}
