package secret

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMask(t *testing.T) {
	tests := []struct{ in, want string }{
		// URLs: the password of the userinfo, credential parameters; the rest as written.
		{`GET http://user:hunter2@prom:9090/api/v1/query?query=up`, `GET http://user:xxxxx@prom:9090/api/v1/query?query=up`},
		{`Get "https://prom/api/v1/query?token=abc123&query=up%7Bjob%3D%22x%22%7D": EOF`, `Get "https://prom/api/v1/query?token=xxxxx&query=up%7Bjob%3D%22x%22%7D": EOF`},
		{`https://h/p?a=1&api_key=K&X-Amz-Signature=S&sig=Z;password=P#access_token=T`, `https://h/p?a=1&api_key=xxxxx&X-Amz-Signature=xxxxx&sig=xxxxx;password=xxxxx#access_token=xxxxx`},
		{`https://h/p?apiKey=K&auth=A&client_secret=C&X-Goog-Credential=G`, `https://h/p?apiKey=xxxxx&auth=xxxxx&client_secret=xxxxx&X-Goog-Credential=xxxxx`},
		{`redis://:r3d1s@cache:6379/0`, `redis://:xxxxx@cache:6379/0`},
		{`postgresql://llmproxy:dbpassword9090@db:5432/litellm?sslmode=require`, `postgresql://llmproxy:xxxxx@db:5432/litellm?sslmode=require`},
		{`http://user@host/x?query=up&token=`, `http://user@host/x?query=up&token=`}, // a user alone, an empty value: nothing to hide
		{`tcp://*:5557`, `tcp://*:5557`},
		// Configuration lines: the value of a credential key, quoted or not.
		{`  master_key: sk-1234`, `  master_key: xxxxx`},
		{`-  master_key: sk-1234 # the admin key`, `-  master_key: xxxxx # the admin key`},
		{`    "api_key": "sk-abc\"def", "model": "m"`, `    "api_key": "xxxxx", "model": "m"`},
		{`{api_key: sk-abc, model: m}`, `{api_key: xxxxx, model: m}`},
		{`DB_PASSWORD=s3cret`, `DB_PASSWORD=xxxxx`},
		{`a_token=1,b_secret=2`, `a_token=xxxxx,b_secret=xxxxx`},
		{`--api-key=abc --port 8000`, `--api-key=xxxxx --port 8000`},
		{`Authorization: Bearer eyJhbGci`, `Authorization: xxxxx`},
		{`  apiKey: 'k'`, `  apiKey: 'xxxxx'`},
		{`dsn: "user:pass@tcp(db:3306)/app"`, `dsn: "xxxxx"`},
		{`  database_url: postgres://u:p@db/x`, `  database_url: postgres://u:xxxxx@db/x`},
		// References to where a secret is kept, and what is no secret, stay visible.
		{`  master_key: os.environ/LITELLM_MASTER_KEY`, `  master_key: os.environ/LITELLM_MASTER_KEY`},
		{`  api_key: ${OPENAI_API_KEY}`, `  api_key: ${OPENAI_API_KEY}`},
		{`  password: {{ .Values.password }}`, `  password: {{ .Values.password }}`},
		{`  token: null`, `  token: null`},
		{`            key: api-key`, `            key: api-key`}, // a secretKeyRef's key names the Secret's entry
		{`  max_tokens: 100`, `  max_tokens: 100`},
		{`  sessionKey: x-user-id`, `  sessionKey: x-user-id`}, // production-stack's header name
		{`  routing_key: model`, `  routing_key: model`},
		{`  eos_token: im_end`, `  eos_token: im_end`},
		{`AWS_SECRET_ACCESS_KEY=abc`, `AWS_SECRET_ACCESS_KEY=xxxxx`},
		{`  hf_token: hf_abc`, `  hf_token: xxxxx`},
		{`  blockSizeTokens: 64`, `  blockSizeTokens: 64`},
		{`  tokenizer: Qwen/Qwen3`, `  tokenizer: Qwen/Qwen3`},
		{`the cache key is shared`, `the cache key is shared`},
		// Key words in prose, as reports write them, are no configuration.
		{`bytes per stored token:   3.70`, `bytes per stored token:   3.70`},
		{`routingLogic session without a sessionKey: every request goes to a random replica`, `routingLogic session without a sessionKey: every request goes to a random replica`},
		{`vllm serve m --api-key=abc --port 8000`, `vllm serve m --api-key=xxxxx --port 8000`},
		// Several lines, each on its own.
		{"general_settings:\n  master_key: sk-1\n  database_url: \"postgresql://a:b@h/d\"\n", "general_settings:\n  master_key: xxxxx\n  database_url: \"postgresql://a:xxxxx@h/d\"\n"},
	}
	for _, tt := range tests {
		got := Mask(tt.in)
		if got != tt.want {
			t.Errorf("Mask(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		if again := Mask(got); again != got {
			t.Errorf("Mask is not idempotent on %q: %q", got, again)
		}
	}
}

func FuzzMask(f *testing.F) {
	for _, s := range []string{`http://u:p@h/?token=t`, "master_key: sk\n", `{"api_key": "x"}`, `a://b@c:d@e`, "://", `token=`, "\"password\": \"\\\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Mask(s)
		if again := Mask(got); again != got {
			t.Errorf("not idempotent: %q -> %q -> %q", s, got, again)
		}
		// Writer, which looks at the bytes before making a string of them, writes Mask's text.
		var b strings.Builder
		if _, err := (Writer{W: &b}).Write([]byte(s)); err != nil || b.String() != got {
			t.Errorf("Writer wrote %q, Mask gives %q", b.String(), got)
		}
		// Masking only ever replaces values with xxxxx: lines stay lines.
		if strings.Count(got, "\n") != strings.Count(s, "\n") {
			t.Errorf("line count changed: %q -> %q", s, got)
		}
		// Valid JSON stays valid JSON.
		if json.Valid([]byte(s)) && !json.Valid(MaskJSON([]byte(s))) {
			t.Errorf("MaskJSON(%q) = %q: not JSON", s, MaskJSON([]byte(s)))
		}
	})
}

func TestMaskJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		// Only strings that change are written again; order, spacing and other escapes stay.
		{`{"z": "http://u:p@h/?token=t&a=1", "a": "x\u0026y", "n": 1}`, `{"z": "http://u:xxxxx@h/?token=xxxxx&a=1", "a": "x\u0026y", "n": 1}`},
		{"{\n  \"message\": \"Get \\\"https://h/?sig=S\\\": EOF\",\n  \"k\": [\"master_key: sk-1\"]\n}\n", "{\n  \"message\": \"Get \\\"https://h/?sig=xxxxx\\\": EOF\",\n  \"k\": [\"master_key: xxxxx\"]\n}\n"},
		{`{"unterminated": "http://u:p@h`, `{"unterminated": "http://u:p@h`},
		{`[]`, `[]`},
	}
	for _, tt := range tests {
		if got := string(MaskJSON([]byte(tt.in))); got != tt.want {
			t.Errorf("MaskJSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := Writer{W: &b}
	for _, line := range []string{"GET http://u:p@h\n", "plain\n", "--api-key=sk-1 vllm:x\n"} {
		if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", line, n, err, len(line))
		}
	}
	if got, want := b.String(), "GET http://u:xxxxx@h\nplain\n--api-key=xxxxx vllm:x\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

// TestMayHaveKey: the quick test never says no to text the key expression matches, on random
// text made of the pieces a credential line is written with (key words in any case, quotes,
// blanks, separators, brackets, flags, new lines).
func TestMayHaveKey(t *testing.T) {
	pieces := []string{"key", "KEY", "Token", "password", "passwd", "pwd", "secret", "credentials", "Authorization", "dsn",
		"api_", "x", "_", "\u212Aey", "pa\u017F\u017Fword", ".", "-", "--", " ", "\t", "\n", `"`, "'", ":", "=", "{", ",", "}", "#", "sk-1", "vllm:prompt_tokens_total"}
	rng := rand.New(rand.NewPCG(3, 4))
	matched := 0
	for range 200000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if keyRE.MatchString(s) {
			matched++
			if !mayHaveKey(s) {
				t.Fatalf("mayHaveKey(%q) = false, but the key expression matches it", s)
			}
		}
	}
	if matched < 1000 {
		t.Fatalf("only %d of the random texts hold a key: the test shows little", matched)
	}
	if mayHaveKey("ERROR 372:24 panel \"Average ITL\" query A: vllm:time_per_output_token_seconds_sum was removed") {
		t.Errorf("a lint finding about a token metric looks like a key")
	}
}
