package config

import (
	"bytes"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/textpos"
)

// Token is one word of a command line and where it starts in the file.
type Token struct {
	Text string
	At   Pos
}

// locator finds words of a command in the file, in order, for their positions.
type locator struct {
	fl     *File
	cursor int
	host   Pos
}

func (fl *File) locatorAt(n *yaml.Node) *locator {
	p := Pos{n.Line, n.Column}
	return &locator{fl: fl, cursor: fl.lines.Offset(n.Line, n.Column), host: p}
}

func (lc *locator) find(text string) Pos {
	if text == "" {
		return lc.host
	}
	probe := text
	if len(probe) > 40 {
		probe = probe[:40]
	}
	j := bytes.Index(lc.fl.src[lc.cursor:], []byte(probe))
	if j < 0 {
		return lc.host
	}
	at := lc.cursor + j
	lc.cursor = at + len(probe)
	l, c := lc.fl.lines.Pos(at)
	return Pos{l, c}
}

// Command is one simple command of a shell text.
type Command struct {
	Argv []Token
	At   Pos
}

// ShellWords splits shell text into simple commands of words: quotes, backslash escapes and
// line continuations as sh reads them; ;, &&, ||, | and newlines end a command. Variables are
// kept as written. at maps a byte offset of the text to the file.
func ShellWords(s string, at func(off int) Pos) []Command {
	var out []Command
	var cur []Token
	var w strings.Builder
	inWord := false
	wordStart := 0
	flushWord := func() {
		if inWord {
			cur = append(cur, Token{Text: w.String(), At: at(wordStart)})
			w.Reset()
			inWord = false
		}
	}
	flushCmd := func() {
		flushWord()
		if len(cur) > 0 {
			out = append(out, Command{Argv: cur, At: cur[0].At})
			cur = nil
		}
	}
	start := func(i int) {
		if !inWord {
			inWord, wordStart = true, i
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++ // continuation
		case c == '\\' && i+1 < len(s) && s[i+1] == '\r' && i+2 < len(s) && s[i+2] == '\n':
			i += 2
		case c == '\\' && i+1 < len(s):
			start(i)
			w.WriteByte(s[i+1])
			i++
		case c == '\'':
			start(i)
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				w.WriteString(s[i+1:])
				i = len(s)
				break
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			start(i)
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					if s[i+1] != '\n' {
						w.WriteByte(s[i+1])
					}
					i++
					continue
				}
				w.WriteByte(s[i])
			}
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			flushCmd()
		case c == ' ' || c == '\t' || c == '\r':
			flushWord()
		case c == '\n' || c == ';' || c == '|' || c == '&' || c == '>' || c == '<':
			if c == '>' || c == '<' {
				// A redirection: its target is not an argument, nor is the descriptor
				// number written against it (2>&1).
				if inWord && i-wordStart == w.Len() && strings.Trim(w.String(), "0123456789") == "" {
					w.Reset()
					inWord = false
				}
				flushWord()
				for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '&' || s[i+1] == ' ') {
					i++
				}
				for i+1 < len(s) && s[i+1] != ' ' && s[i+1] != '\n' {
					i++
				}
				continue
			}
			flushCmd()
		default:
			start(i)
			w.WriteByte(c)
		}
	}
	flushCmd()
	return out
}

// ShellCommands splits a script file into simple commands with file positions.
func ShellCommands(src []byte) []Command {
	if len(src) > 4<<20 {
		return nil
	}
	li := textpos.New(src)
	return ShellWords(string(src), func(off int) Pos { l, c := li.Pos(off); return Pos{l, c} })
}

// ScalarCommands splits a YAML scalar holding shell text (sh -c, a compose command string).
func (fl *File) ScalarCommands(n *yaml.Node) []Command {
	lc := fl.locatorAt(n)
	cmds := ShellWords(n.Value, func(int) Pos { return lc.host })
	for i := range cmds {
		for j := range cmds[i].Argv {
			cmds[i].Argv[j].At = lc.find(firstLine(cmds[i].Argv[j].Text))
		}
		if len(cmds[i].Argv) > 0 {
			cmds[i].At = cmds[i].Argv[0].At
		}
	}
	return cmds
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s, _, _ = strings.Cut(s, `"`)
	return s
}

// ListTokens reads a YAML list of words (a container's command or args).
func ListTokens(n *yaml.Node) []Token {
	var out []Token
	for _, c := range Seq(n) {
		if c.Kind == yaml.ScalarNode {
			out = append(out, Token{Text: c.Value, At: Pos{c.Line, c.Column}})
		}
	}
	return out
}

// shellFlag reports a shell invocation: sh -c, bash -lc.
func shellFlag(argv []Token) bool {
	if len(argv) < 2 {
		return false
	}
	b := path.Base(argv[0].Text)
	return (b == "sh" || b == "bash" || b == "zsh" || b == "dash") && strings.HasPrefix(argv[len(argv)-1].Text, "-") && strings.Contains(argv[len(argv)-1].Text, "c")
}

// Launch is one command line a container runs: its words, and whether they are the arguments
// of the image's own entrypoint (no command given).
type Launch struct {
	Command
	ImageArgs bool
}

// ContainerCommands reads a container's command and args (a list, or shell text given to sh -c
// or as a scalar) and returns the command lines it runs.
func (fl *File) ContainerCommands(c *yaml.Node) []Launch {
	image, _ := Str(c, "image")
	cmdNode, argsNode := Get(c, "command"), Get(c, "args")
	var words []Token
	var scripts []*yaml.Node
	cmd := ListTokens(cmdNode)
	args := ListTokens(argsNode)
	if cmdNode != nil && cmdNode.Kind == yaml.ScalarNode {
		scripts = append(scripts, cmdNode)
	}
	if argsNode != nil && argsNode.Kind == yaml.ScalarNode {
		scripts = append(scripts, argsNode)
	}
	switch {
	case shellFlag(cmd):
		// sh -c 'script' [args]: the first argument is the script.
		for _, a := range Seq(argsNode) {
			scripts = append(scripts, a)
			break
		}
	case len(cmd) > 0 && shellFlag(cmd[:min(len(cmd), 2)]) && len(cmd) > 2:
		for _, x := range Seq(cmdNode)[2:] {
			scripts = append(scripts, x)
			break
		}
	default:
		words = append(cmd, args...)
	}
	var out []Launch
	if words != nil {
		out = append(out, Launch{Command{Argv: words, At: Pos{c.Line, c.Column}}, vllmImage(image) && len(cmd) == 0})
	}
	for _, s := range scripts {
		for _, sc := range fl.ScalarCommands(s) {
			out = append(out, Launch{sc, vllmImage(image) && len(cmd) == 0 && cmdNode == nil})
		}
	}
	return out
}

// ReadEnv reads a Kubernetes env list or a compose environment (mapping or KEY=VALUE list).
// Values from valueFrom are present with an empty value.
func ReadEnv(n *yaml.Node) map[string]Token {
	n = Deref(n)
	if n == nil {
		return nil
	}
	out := map[string]Token{}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			v := Deref(n.Content[i+1])
			out[n.Content[i].Value] = Token{Text: v.Value, At: Pos{n.Content[i].Line, n.Content[i].Column}}
		}
	case yaml.SequenceNode:
		for _, it := range n.Content {
			it = Deref(it)
			if it.Kind == yaml.ScalarNode {
				k, v, _ := strings.Cut(it.Value, "=")
				out[k] = Token{Text: v, At: Pos{it.Line, it.Column}}
				continue
			}
			if k, ok := Str(it, "name"); ok {
				v, _ := Str(it, "value")
				kn := KeyNode(it, "name")
				out[k] = Token{Text: v, At: Pos{kn.Line, kn.Column}}
			}
		}
	}
	return out
}

// ShellDefault resolves ${VAR:-default} to its default, as compose files write images.
func ShellDefault(s string) string {
	if strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") {
		if _, d, ok := strings.Cut(s[2:len(s)-1], ":-"); ok {
			return d
		}
	}
	return s
}
