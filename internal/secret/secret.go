// Package secret masks credentials in text kvcheck prints: the password of a URL's userinfo,
// the values of a URL's credential query parameters, and the values of credential keys in
// configuration lines (master_key: sk-..., "password": "...", token=...). Every place that
// shows text from the user's inputs (URLs in errors and reports, diff context, JSON and SARIF
// strings) goes through Mask.
package secret

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Masked stands where a secret was, as url.URL.Redacted writes a password.
const Masked = "xxxxx"

// urlRE finds URLs in text: a scheme, ://, and the characters a URL is written with (up to
// white space, a quote or a bracket that ends it in prose and JSON).
var urlRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>` + "`" + `\\]+`)

// keyRE finds a credential key and its value where configuration writes one: at the start of
// a line (after indentation, a list's "- " or a diff's +, - or space), after { or , (JSON, a
// YAML flow mapping), or as a --flag= anywhere. The key's name ends in key, password, passwd,
// pwd, token, secret, credential(s), authorization or dsn (master_key, apiKey, DB_PASSWORD,
// --api-key); the value is quoted, or the words up to a comma, a closing bracket, a comment or
// the end of the line. A key word in prose ("bytes per stored token: 3.70", "a sessionKey:
// ...") is none of those and stays as it is.
var keyRE = regexp.MustCompile(`(?im)(^[ \t]*(?:[+-][ \t]*)?(?:-[ \t]+)?|[{,][ \t]*|[ \t](?:--))(["']?)([A-Za-z0-9_.-]*(?:key|password|passwd|pwd|token|secret|credentials?|authorization|dsn))(["']?[ \t]*[:=][ \t]*)("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,}\]#]+(?:[ \t]+[^\s,}\]#]+)*)`)

// sensitiveParam reports whether a query parameter's name carries a credential: token,
// access_token, key, api_key, apikey, sig, signature, X-Amz-Signature, password, secret,
// client_secret, auth, credential and the like.
func sensitiveParam(name string) bool {
	n := strings.ToLower(name)
	n = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, n)
	for _, s := range []string{"token", "key", "sig", "signature", "password", "passwd", "pwd", "secret", "auth", "authorization", "credential", "credentials"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// sensitiveKey reports whether a configuration key names a credential. A name ending in key
// counts when it names a credential's key (api_key, masterKey, AWS_SECRET_ACCESS_KEY,
// private_key, ...), not a key of another kind: Kubernetes' secretKeyRef names the Secret's
// entry with "key", production-stack's sessionKey names a header, and cache, hash, routing
// and sort keys are no secrets. A tokenizer's special tokens (bos_token, eos_token, ...) are
// no credentials either.
func sensitiveKey(name string) bool {
	n := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(name))
	if strings.HasSuffix(n, "key") {
		for _, k := range []string{"apikey", "masterkey", "secretkey", "accesskey", "privatekey", "authkey", "signingkey", "encryptionkey", "licensekey", "subscriptionkey", "adminkey", "clientkey"} {
			if strings.HasSuffix(n, k) {
				return true
			}
		}
		return false
	}
	switch n {
	case "bostoken", "eostoken", "padtoken", "unktoken", "septoken", "clstoken", "masktoken":
		return false
	}
	return true
}

// reference reports a value that names where a secret is kept rather than holding it (an
// environment variable, a template action, LiteLLM's os.environ/NAME), or a value that is
// no secret (empty, null, a boolean): those stay visible.
func reference(v string) bool {
	v = strings.Trim(v, `"'`)
	switch strings.ToLower(v) {
	case "", "null", "~", "true", "false", "none", Masked:
		return true
	}
	for _, p := range []string{"os.environ/", "${", "$(", "{{", "<", "$"} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// Mask returns s with every credential it shows replaced by xxxxx: in each URL the password of
// its userinfo (user:xxxxx@host) and the values of its credential query and fragment
// parameters (?token=xxxxx), and on each line the value of a credential key (master_key:
// xxxxx, "api_key": "xxxxx", password=xxxxx). References to a secret (os.environ/KEY, ${VAR},
// {{ .Values.key }}) are kept, as are the keys themselves, so a reader sees what is set where.
// Mask is idempotent.
func Mask(s string) string {
	if !strings.Contains(s, "://") {
		return maskKeys(s)
	}
	// URLs are masked by their own rules, the text between them by the key rule: a query's
	// &-separated pairs are not one value.
	var b strings.Builder
	last := 0
	for _, m := range urlRE.FindAllStringIndex(s, -1) {
		b.WriteString(maskKeys(s[last:m[0]]))
		b.WriteString(maskURL(s[m[0]:m[1]]))
		last = m[1]
	}
	b.WriteString(maskKeys(s[last:]))
	return b.String()
}

func maskKeys(s string) string {
	if !mayHaveKey(s) {
		return s
	}
	return keyRE.ReplaceAllStringFunc(s, maskKey)
}

// mayHaveKey is a quick test before the key expression, which can only match a credential word
// followed by an optional quote, blanks and ':' or '=': text with no such separator needs no
// look. kvcheck prints metric names such as vllm:prompt_tokens_total on most lines of a lint
// report, and those are no keys. It allocates nothing. Text with a byte past ASCII gets the
// look: the expression folds case as Unicode does (the Kelvin sign is a k to it).
func mayHaveKey[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
		if s[i] != ':' && s[i] != '=' {
			continue
		}
		j := i
		for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
			j--
		}
		if j > 0 && (s[j-1] == '"' || s[j-1] == '\'') {
			j--
		}
		for _, w := range keyWords {
			if j >= len(w) && strings.EqualFold(string(s[j-len(w):j]), w) {
				return true
			}
		}
	}
	return false
}

// keyWords are the endings of a credential key's name that keyRE knows.
var keyWords = []string{"key", "password", "passwd", "pwd", "token", "secret", "credential", "credentials", "authorization", "dsn"}

func maskKey(m string) string {
	g := keyRE.FindStringSubmatch(m)
	lead, q1, key, sep, value := g[1], g[2], g[3], g[4], g[5]
	rest := ""
	if !strings.Contains(sep, ":") {
		// key=value, as flags and environment lines write it: the value is one word, and
		// what follows is the next flag.
		if i := strings.IndexAny(value, " \t"); i >= 0 && value[0] != '"' && value[0] != '\'' {
			value, rest = value[:i], value[i:]
		}
	}
	if !sensitiveKey(key) || reference(value) {
		return m
	}
	switch {
	case strings.HasPrefix(value, `"`):
		value = `"` + Masked + `"`
	case strings.HasPrefix(value, `'`):
		value = `'` + Masked + `'`
	default:
		value = Masked
	}
	return lead + q1 + key + sep + value + rest
}

// maskURL masks one URL as Mask describes, changing nothing else in how it is written (no
// re-encoding, unlike a parse and String).
func maskURL(u string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, path := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if user, pass, ok := strings.Cut(authority[:at], ":"); ok && pass != "" && pass != Masked {
			authority = user + ":" + Masked + authority[at:]
		}
	}
	var b strings.Builder
	b.WriteString(scheme + "://" + authority)
	// The query and the fragment: name=value pairs, & or ; between them.
	for i := 0; i < len(path); {
		j := strings.IndexAny(path[i:], "?#&;")
		if j < 0 {
			b.WriteString(path[i:])
			break
		}
		b.WriteString(path[i : i+j+1])
		i += j + 1
		k := strings.IndexAny(path[i:], "#&;")
		if k < 0 {
			k = len(path) - i
		}
		name, value, ok := strings.Cut(path[i:i+k], "=")
		if ok && value != "" && sensitiveParam(name) && !reference(value) {
			b.WriteString(name + "=" + Masked)
		} else {
			b.WriteString(path[i : i+k])
		}
		i += k
	}
	return b.String()
}

// Writer masks what is written through it (Mask), one Write at a time: its callers write whole
// lines, so no URL or key is split between two writes.
type Writer struct{ W io.Writer }

// Write writes Mask(p) and reports p as written. A line Mask leaves as it is (no URL, no
// key's separator after a credential word, Mask's own quick tests) is written without a copy.
func (m Writer) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte("://")) && !mayHaveKey(p) {
		return m.W.Write(p)
	}
	s := string(p)
	if ms := Mask(s); ms != s {
		if _, err := io.WriteString(m.W, ms); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return m.W.Write(p)
}

// MaskJSON masks every string of a JSON text (Mask), keeping everything else as it is written:
// the order of members, the indentation, the escapes of strings it does not change. A string
// it changes is encoded again without HTML escapes, as kvcheck's JSON writer encodes.
func MaskJSON(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(b) {
			break // not JSON: left as it is
		}
		lit := b[i : j+1]
		var s string
		if json.Unmarshal(lit, &s) == nil {
			if ms := Mask(s); ms != s {
				var enc bytes.Buffer
				e := json.NewEncoder(&enc)
				e.SetEscapeHTML(false)
				if e.Encode(ms) == nil {
					out = append(out, b[last:i]...)
					out = append(out, bytes.TrimSuffix(enc.Bytes(), []byte("\n"))...)
					last = j + 1
				}
			}
		}
		i = j
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}
