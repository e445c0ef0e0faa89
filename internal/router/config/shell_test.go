package config

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/textpos"
)

// FuzzShellWords splits arbitrary shell text: no panic, every word's position inside the text,
// and a text of plain words splits into exactly those words.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{
		"vllm serve m \\\n  --kv-events-config '{\"a\":1}' \\\n  --port 8000\n",
		`--kv-events-config "{\"enable_kv_cache_events\":true,\"topic\":\"kv@${POD_IP}\"}"`,
		"a 'unterminated", `b "unterminated \`, "x; y && z | w > /dev/null 2>&1 &", "# comment\nexec vllm serve", "\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		li := textpos.New([]byte(s))
		cmds := ShellWords(s, func(off int) Pos {
			if off < 0 || off > len(s) {
				t.Fatalf("offset %d outside %d bytes", off, len(s))
			}
			l, c := li.Pos(off)
			return Pos{l, c}
		})
		for _, c := range cmds {
			if len(c.Argv) == 0 {
				t.Fatalf("empty command from %q", s)
			}
		}
		if !plainWordsRE.MatchString(s) || strings.TrimSpace(s) == "" {
			return
		}
		if len(cmds) != 1 || strings.Join(wordsOf(cmds[0].Argv), " ") != strings.Join(strings.Fields(s), " ") {
			t.Fatalf("plain words %q split as %+v", s, cmds)
		}
	})
}

var plainWordsRE = regexp.MustCompile(`^[A-Za-z0-9 ._/=:@-]*$`)

func wordsOf(ts []Token) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Text
	}
	return out
}

// TestShellWordsRedirectionFD: the descriptor of 2>&1 is part of the redirection, not an
// argument of the command; a word that only ends in digits stays a word.
func TestShellWordsRedirectionFD(t *testing.T) {
	cmds := ShellWords("router --port 8000 > log 2>&1 &\necho a2>x\n", func(int) Pos { return Pos{1, 1} })
	var got []string
	for _, c := range cmds {
		var ws []string
		for _, w := range c.Argv {
			ws = append(ws, w.Text)
		}
		got = append(got, strings.Join(ws, " "))
	}
	if want := []string{"router --port 8000", "echo a2"}; !slices.Equal(got, want) {
		t.Errorf("commands = %q, want %q", got, want)
	}
}
