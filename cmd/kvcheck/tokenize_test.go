package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

// TestTokenizeCachingOffOneWay points audit, simulate and assess at one emulated replica that
// runs with prefix caching off: each says so with the same finding (code prefix-caching-off,
// subject the --tokenize URL), where each used to say it its own way (a note, audit's own
// code, a third message).
func TestTokenizeCachingOffOneWay(t *testing.T) {
	off := false
	f, err := fleet.New(fleet.Options{Replicas: []fleet.Config{{PrefixCaching: &off}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	url := f.Replicas()[0].URL()
	var log strings.Builder
	for i := range 6 {
		fmt.Fprintf(&log, `{"timestamp": %d, "messages":[{"role":"system","content":"You are the ACME support assistant."},{"role":"user","content":"question %d"}]}`+"\n", 1764496800+i, i)
	}
	const msg = "prefix caching is off (vllm:cache_config_info enable_prefix_caching=False): no router can produce hits"
	for _, args := range [][]string{
		{"audit", "--requests", "-", "--tokenize", url},
		{"simulate", "--requests", "-", "--tokenize", url, "--replicas", "2", "--policies", "round-robin"},
		{"assess", "--requests", "-", "--tokenize", url},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append(args, "-o", "json"), streams{In: strings.NewReader(log.String()), Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"})
		if code != exitOK {
			t.Errorf("%s: exit %d (stderr %q)", args[0], code, errOut.String())
			continue
		}
		var doc any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%s: output is not JSON: %v", args[0], err)
		}
		if !hasFinding(doc, func(f map[string]any) bool {
			return f["code"] == "prefix-caching-off" && f["message"] == msg && (f["subject"] == url || f["file"] == url)
		}) {
			t.Errorf("%s: no prefix-caching-off finding about %s in\n%s", args[0], url, out.String())
		}
	}
}

// hasFinding reports whether any object anywhere in a decoded JSON document matches.
func hasFinding(v any, match func(map[string]any) bool) bool {
	switch x := v.(type) {
	case map[string]any:
		if match(x) {
			return true
		}
		for _, e := range x {
			if hasFinding(e, match) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasFinding(e, match) {
				return true
			}
		}
	}
	return false
}
