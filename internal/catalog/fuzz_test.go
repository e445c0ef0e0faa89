package catalog

import "testing"

// FuzzParseTargets: --target is typed by people; whatever it holds, ParseTargets returns an
// error or targets of known families with the versions written, and never panics.
func FuzzParseTargets(f *testing.F) {
	c, err := Load()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"vllm=0.30,llm-d=0.5", "gaie=1.6", " vllm = 0.8.5 ", "vllm", "=", "vllm=0.3,vllm=0.4", "llm-d=v0.10.0,,", "sglang=1", "vllm=0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := c.ParseTargets(spec)
		if err != nil {
			return
		}
		for fam, v := range got {
			if c.Family(fam) == nil {
				t.Fatalf("%q: unknown family %q accepted", spec, fam)
			}
			if w, err := ParseVersion(v.String()); err != nil || w != v {
				t.Fatalf("%q: version %v does not round-trip", spec, v)
			}
		}
	})
}
