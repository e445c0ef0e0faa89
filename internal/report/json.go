package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/kvcheck/kvcheck/internal/secret"
)

func init() {
	register(writer{format: FormatJSON, order: 1, write: writeJSON})
}

// writeJSON writes the result's JSON document.
func writeJSON(w io.Writer, r Result, _ Options) error {
	if r.Document == nil {
		return fmt.Errorf("write json: this result has no JSON document")
	}
	if build, ok := r.Document.(func() any); ok {
		return JSON(w, build())
	}
	return JSON(w, r.Document)
}

// JSON writes v as indented JSON followed by a newline. Callers put SchemaVersion in their
// document struct and initialise slices so that empty lists render as [] rather than null.
//
// Every string is masked (secret.MaskJSON): a URL's password or token, a credential key's
// value in a quoted line, as every other format masks them.
func JSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	_, err := w.Write(secret.MaskJSON(b.Bytes()))
	return err
}
