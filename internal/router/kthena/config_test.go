package kthena

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/router/config"
	"github.com/kvcheck/kvcheck/internal/router/config/configtest"
	"github.com/kvcheck/kvcheck/internal/router/product"
)

// TestSnippetReadBack: lint recognises the ConfigMap kvcheck writes and reads back every setting
// it holds, away from the shipped values (weights 3, 0, 2; no filter; each argument changed), so
// that Configure gives the settings the snippet was written from. A ConfigMap of another
// product's (no routerConfiguration key) is not Kthena's.
func TestSnippetReadBack(t *testing.T) {
	s := Shipped()
	s.Score = []Plugin{{"prefix-cache", 3}, {"least-request", 0}, {"gpu-usage", 2}}
	s.Filter = nil
	s.MaxWaiting, s.TTFTWeight, s.BlockSize, s.MaxBlocks, s.CacheSize, s.TopK = 7, 0.25, 32, 64, 1000, 2
	sn := Router{}.Snippet("kthena-router", s)
	files := map[string]string{sn.File: sn.Text, "other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  config.yaml: |\n    scheduler: {}\n"}
	res := configtest.Lint(t, []config.Checker{Checker{}}, files)
	if got := res[sn.File].Formats; len(got) != 1 || got[0] != FormatConfigMap {
		t.Errorf("formats %v, want [%s]", got, FormatConfigMap)
	}
	if got := res["other.yaml"].Formats; len(got) == 1 && got[0] == FormatConfigMap {
		t.Errorf("another ConfigMap read as %s", FormatConfigMap)
	}
	l := config.New(config.Options{Checkers: []config.Checker{Router{}}})
	dep := l.DeploymentOf([]config.Source{{Path: sn.File, Original: []byte(sn.Text)}, {Path: "other.yaml", Original: []byte(files["other.yaml"])}})
	if len(dep.Routers) != 1 {
		t.Fatalf("routers read %+v, want one", dep.Routers)
	}
	rf := dep.Routers[0]
	got := Router{}.Configure(product.Facts{Product: rf.Kind, File: rf.File, Line: rf.Line, Values: rf.Values})
	if len(got) != 1 || got[0].Policy != "kthena-router" {
		t.Fatalf("configured %+v, want one kthena-router row", got)
	}
	if d := cmp.Diff(s, got[0].Settings); d != "" {
		t.Errorf("settings read back differ (-written +read):\n%s", d)
	}
}
