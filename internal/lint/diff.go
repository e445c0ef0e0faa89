package lint

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the LCS table of Diff (lines of a times lines of b changed region).
const maxDiffCells = 50_000_000

// DiffAll is the unified diff of every file results rewrote, in their order: what lint --diff
// shows and --fix would write.
func DiffAll(results []FileResult) string {
	var b strings.Builder
	for _, r := range results {
		if r.Fixed != nil {
			b.WriteString(Diff(r.Path, r.Original, r.Fixed))
		}
	}
	return b.String()
}

// Diff returns a unified diff (3 lines of context) turning a into b, with path in the
// headers, or "" when they are equal.
func Diff(path string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	al, bl := splitLines(string(a)), splitLines(string(b))
	// Trim the common head and tail: fixes touch few lines, so the table stays small.
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	am, bm := al[pre:len(al)-suf], bl[pre:len(bl)-suf]
	type op struct {
		kind byte // ' ', '-', '+'
		line string
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', al[i]})
	}
	switch {
	case len(am) == len(bm):
		// Rewrites never add or remove a line, so line i of one side is line i of the other:
		// pair them instead of building a table of len(am)*len(bm) cells, which for two
		// fixes far apart in a big file would be hundreds of megabytes.
		for i := range am {
			if am[i] == bm[i] {
				ops = append(ops, op{' ', am[i]})
				continue
			}
			ops = append(ops, op{'-', am[i]}, op{'+', bm[i]})
		}
	case int64(len(am)+1)*int64(len(bm)+1) > maxDiffCells:
		for _, l := range am {
			ops = append(ops, op{'-', l})
		}
		for _, l := range bm {
			ops = append(ops, op{'+', l})
		}
	default:
		// lcs[i][j] is the LCS length of am[i:] and bm[j:].
		w := len(bm) + 1
		lcs := make([]int32, (len(am)+1)*w)
		for i := len(am) - 1; i >= 0; i-- {
			for j := len(bm) - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
				} else {
					lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(am) || j < len(bm) {
			switch {
			case i < len(am) && j < len(bm) && am[i] == bm[j]:
				ops = append(ops, op{' ', am[i]})
				i++
				j++
			case i < len(am) && (j == len(bm) || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
				ops = append(ops, op{'-', am[i]})
				i++
			default:
				ops = append(ops, op{'+', bm[j]})
				j++
			}
		}
	}
	for i := len(al) - suf; i < len(al); i++ {
		ops = append(ops, op{' ', al[i]})
	}

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", diffName("a/"+path), diffName("b/"+path))
	const ctx = 3
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk: from ctx lines before this change to ctx lines after the last change that
		// is within 2*ctx lines of the previous one.
		start := max(k-ctx, 0)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		aN, bN := 0, 0
		aLine, bLine := 0, 0
		for _, o := range ops[:start] {
			if o.kind != '+' {
				aLine++
			}
			if o.kind != '-' {
				bLine++
			}
		}
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aN++
			}
			if o.kind != '-' {
				bN++
			}
		}
		aStart, bStart := aLine+1, bLine+1
		if aN == 0 {
			aStart--
		}
		if bN == 0 {
			bStart--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart, aN, bStart, bN)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		k = end
	}
	return out.String()
}

// splitLines splits s into lines without their newlines.
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffName is a file name on a unified diff's ---/+++ line: as it is, or, when it holds a
// control character, a double quote or a backslash, C-quoted as git writes it (octal escapes
// for bytes without a letter of their own), which git apply and GNU patch read back. A name
// with a newline would otherwise end the line and start one of its own.
func diffName(name string) string {
	if !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' || r == '\\' }) {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			if e := strings.IndexByte("\a\b\t\n\v\f\r", c); e >= 0 {
				b.WriteByte('\\')
				b.WriteByte("abtnvfr"[e])
			} else {
				fmt.Fprintf(&b, "\\%03o", c)
			}
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
