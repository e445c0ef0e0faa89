package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRequestFile: "-" reads the reader given and names it standard input; a file is read
// by its path; a missing file is an error naming the request log. Without a tokenize server the
// trace has no block-size note and no finding.
func TestReadRequestFile(t *testing.T) {
	log := `{"prompt": "` + blk('a') + blk('b') + `"}` + "\n" + `{"prompt": "` + blk('a') + blk('c') + `"}` + "\n"
	tr, fs, err := ReadRequestFile(context.Background(), "-", strings.NewReader(log), RequestLogOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Name != "standard input" || len(tr.Requests) != 2 || len(fs) != 0 {
		t.Errorf("stdin: name %q, %d requests, findings %v; want standard input, 2, none", tr.Name, len(tr.Requests), fs)
	}
	for _, n := range tr.Notes {
		if strings.HasPrefix(n, "block size:") {
			t.Errorf("note %q without a tokenize server", n)
		}
	}
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, _, err = ReadRequestFile(context.Background(), path, nil, RequestLogOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Name != path || len(tr.Requests) != 2 {
		t.Errorf("file: name %q, %d requests; want %s, 2", tr.Name, len(tr.Requests), path)
	}
	if _, _, err := ReadRequestFile(context.Background(), path+".missing", nil, RequestLogOptions{}, nil); err == nil || !strings.Contains(err.Error(), "open request log") {
		t.Errorf("missing file: err = %v, want it to name the request log", err)
	}
}
