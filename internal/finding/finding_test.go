package finding

import (
	"encoding/json"
	"testing"
)

func TestParseSeverity(t *testing.T) {
	tests := []struct {
		in      string
		want    Severity
		wantErr bool
	}{
		{"info", Info, false},
		{"WARNING", Warning, false},
		{"warn", Warning, false},
		{" error ", Error, false},
		{"fatal", Info, true},
		{"", Info, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSeverity(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSeverity(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseSeverity(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestSeverityJSONRoundTrip(t *testing.T) {
	b, err := json.Marshal(Finding{Severity: Warning, Code: "c", Message: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"severity":"warning","code":"c","message":"m"}`; got != want {
		t.Errorf("marshal = %s, want %s", got, want)
	}
	var f Finding
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Severity != Warning {
		t.Errorf("round trip severity = %v, want warning", f.Severity)
	}
	if err := json.Unmarshal([]byte(`{"severity":"loud"}`), &f); err == nil {
		t.Error("unmarshal of an unknown severity: got nil error")
	}
}

func TestWorst(t *testing.T) {
	if _, any := Worst(nil); any {
		t.Error("Worst(nil) reported a finding")
	}
	got, any := Worst([]Finding{{Severity: Info}, {Severity: Error}, {Severity: Warning}})
	if !any || got != Error {
		t.Errorf("Worst = %v, %v; want error, true", got, any)
	}
}

// A finding lint --fix resolved is still reported but no longer counts for --fail-on.
func TestWorstSkipsExempt(t *testing.T) {
	fs := []Finding{{Severity: Error, Exempt: true}, {Severity: Info}}
	if got, any := Worst(fs); !any || got != Info {
		t.Errorf("Worst = %v, %v; want info, true", got, any)
	}
	if _, any := Worst([]Finding{{Severity: Error, Exempt: true}}); any {
		t.Error("Worst counted a resolved finding")
	}
}

// Location, fixability and properties are not part of a finding's JSON: documents choose.
func TestFindingJSONShape(t *testing.T) {
	b, err := json.Marshal(Finding{Severity: Error, Code: "c", Message: "m", Subject: "r1", Source: "tap", Fix: "do x",
		File: "a.json", Line: 3, Column: 4, Pointer: "/x", Fixable: true, Exempt: true, Properties: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"severity":"error","code":"c","message":"m","subject":"r1","source":"tap","fix":"do x"}`; got != want {
		t.Errorf("marshal = %s, want %s", got, want)
	}
}
