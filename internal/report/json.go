package report

import (
	"encoding/json"
	"fmt"
	"io"
)

func init() {
	register(writer{format: FormatJSON, order: 1, write: writeJSON})
}

// writeJSON writes the result's JSON document.
func writeJSON(w io.Writer, r Result, _ Options) error {
	if r.Document == nil {
		return fmt.Errorf("write json: this result has no JSON document")
	}
	return JSON(w, r.Document)
}

// JSON writes v as indented JSON followed by a newline. Callers put SchemaVersion in their
// document struct and initialise slices so that empty lists render as [] rather than null.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
