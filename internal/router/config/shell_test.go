package config

import (
	"os"
	"path/filepath"
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
		cmds := shellWords(s, func(off int) pos {
			if off < 0 || off > len(s) {
				t.Fatalf("offset %d outside %d bytes", off, len(s))
			}
			l, c := li.Pos(off)
			return pos{l, c}
		})
		for _, c := range cmds {
			if len(c.argv) == 0 {
				t.Fatalf("empty command from %q", s)
			}
		}
		if !plainWordsRE.MatchString(s) || strings.TrimSpace(s) == "" {
			return
		}
		if len(cmds) != 1 || strings.Join(wordsOf(cmds[0].argv), " ") != strings.Join(strings.Fields(s), " ") {
			t.Fatalf("plain words %q split as %+v", s, cmds)
		}
	})
}

var plainWordsRE = regexp.MustCompile(`^[A-Za-z0-9 ._/=:@-]*$`)

func wordsOf(ts []token) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.text
	}
	return out
}

// TestShellWordsRedirectionFD: the descriptor of 2>&1 is part of the redirection, not an
// argument of the command; a word that only ends in digits stays a word.
func TestShellWordsRedirectionFD(t *testing.T) {
	cmds := shellWords("router --port 8000 > log 2>&1 &\necho a2>x\n", func(int) pos { return pos{1, 1} })
	var got []string
	for _, c := range cmds {
		var ws []string
		for _, w := range c.argv {
			ws = append(ws, w.text)
		}
		got = append(got, strings.Join(ws, " "))
	}
	if want := []string{"router --port 8000", "echo a2"}; !slices.Equal(got, want) {
		t.Errorf("commands = %q, want %q", got, want)
	}
}

// TestSGLangCorpusWorkers: the corpus PD gateway script's prefill and decode URLs read as
// workers, and the bootstrap port after the prefill URL is not taken for one.
func TestSGLangCorpusWorkers(t *testing.T) {
	root := os.Getenv("KVCHECK_CORPUS")
	if root == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	p := filepath.Join(root, "configs", "sglang", "sglang-fork_ascend_deepseekr1_router.sh")
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var gws []*sglangGateway
	for _, c := range shellCommands(src) {
		if g := sglangFrom(p, c.argv); g != nil {
			gws = append(gws, g)
		}
	}
	if len(gws) != 1 {
		t.Fatalf("%d gateways, want 1", len(gws))
	}
	var hosts []string
	for _, w := range gws[0].workers {
		hosts = append(hosts, workerHost(w.text))
	}
	if want := []string{"192.168.0.184", "", "192.168.0.60"}; !slices.Equal(hosts, want) {
		t.Errorf("worker hosts = %q, want %q", hosts, want)
	}
	if gws[0].rust || gws[0].at.line != 4 {
		t.Errorf("gateway rust=%v at line %d, want the Python launcher at line 4", gws[0].rust, gws[0].at.line)
	}
}
