package report

import (
	"encoding/json"
)

// DemoSection is one section of kvcheck demo in JSON: the commands it ran, in order.
type DemoSection struct {
	Name string    `json:"name"`
	Runs []DemoRun `json:"runs"`
}

// DemoRun is one command the demo ran and what it wrote to standard output.
type DemoRun struct {
	// Command is the argument list after "kvcheck".
	Command  []string `json:"command"`
	ExitCode int      `json:"exit_code"`
	// Output is the command's own JSON document, or its output as a string when it is not
	// JSON (a unified diff).
	Output json.RawMessage `json:"output"`
}

type demoDoc struct {
	SchemaVersion int           `json:"schema_version"`
	Sections      []DemoSection `json:"sections"`
}

// Demo is the JSON result of kvcheck demo: its sections, each with the commands it ran and
// their documents. (In text the demo writes each section as it runs.)
func Demo(sections []DemoSection) Result {
	if sections == nil {
		sections = []DemoSection{}
	}
	for i := range sections {
		if sections[i].Runs == nil {
			sections[i].Runs = []DemoRun{}
		}
		for j := range sections[i].Runs {
			r := &sections[i].Runs[j]
			if r.Command == nil {
				r.Command = []string{}
			}
			if !json.Valid(r.Output) {
				s, _ := json.Marshal(string(r.Output)) // a string always encodes
				r.Output = s
			}
		}
	}
	return Result{Document: demoDoc{SchemaVersion: SchemaVersion, Sections: sections}}
}
