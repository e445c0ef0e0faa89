package fleet

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzTokenize: any body gets a JSON answer, 200 or a vLLM-shaped error, never a panic.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{`{"prompt":"hi"}`, `{"messages":[{"role":"user","content":"x"}]}`, `{"messages":[{"role":"user","content":[{"type":"text","text":"é<|eot_id|>"}]}],"chat_template_kwargs":{"date_string":3}}`, `{`, `{"prompt":"<|"}`} {
		f.Add(s)
	}
	h := TokenizeHandler(TokenizeOptions{DateLine: true, MaxModelLen: 512})
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/tokenize", strings.NewReader(body)))
		if rec.Code != http.StatusOK && !strings.Contains(rec.Body.String(), `"error"`) {
			t.Fatalf("status %d without an error body: %s", rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("content type %q", ct)
		}
	})
}
