package audit

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestRaw checks that Raw gives the line of the request Next returned, across blank lines,
// bad lines and exports.
func TestRaw(t *testing.T) {
	lines := []string{
		`{"prompt": "a", "max_tokens": 3}`,
		"",
		"  not json  ",
		`  {"ts": 5, "body": {"prompt": "b"}}  `,
		`{"messages": [{"role": "user", "content": "c"}], "n": 2}`,
	}
	want := []string{lines[0], strings.TrimSpace(lines[3]), lines[4]}
	rr := NewRequestReader(strings.NewReader(strings.Join(lines, "\n")), 0)
	var got []string
	for {
		_, err := rr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *LineError
		if errors.As(err, &le) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(rr.Raw()))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Raw lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
