package lint

import (
	"bytes"
	"errors"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// maskTemplate returns src with every Go template action ({{ ... }}) replaced by filler of
// the same length, newlines kept, so that lines, columns and offsets stay those of the file.
// An action alone on its line (if, range, end, include, toYaml) becomes spaces, as if the
// line were empty; an action among other text is a value and becomes x's, which YAML reads
// as a plain scalar and PromQL as a name. masks are the replaced spans; nil when an action
// is not closed.
func maskTemplate(src []byte) (masked []byte, masks [][2]int) {
	in := make([]bool, len(src)) // inside an action, newlines excepted
	for at := 0; ; {
		i := bytes.Index(src[at:], []byte("{{"))
		if i < 0 {
			break
		}
		start := at + i
		j := bytes.Index(src[start+2:], []byte("}}"))
		if j < 0 {
			return nil, nil
		}
		end := start + 2 + j + 2
		masks = append(masks, [2]int{start, end})
		for k := start; k < end; k++ {
			in[k] = src[k] != '\n' && src[k] != '\r'
		}
		at = end
	}
	if masks == nil {
		return nil, nil
	}
	out := bytes.Clone(src)
	for line := 0; line < len(out); {
		end := bytes.IndexByte(out[line:], '\n')
		if end < 0 {
			end = len(out)
		} else {
			end += line
		}
		alone := true
		for k := line; k < end; k++ {
			if c := src[k]; !in[k] && c != ' ' && c != '\t' && c != '\r' {
				alone = false
				break
			}
		}
		fill := byte('x')
		if alone {
			fill = ' '
		}
		for k := line; k < end; k++ {
			if in[k] {
				out[k] = fill
			}
		}
		line = end + 1
	}
	return out, masks
}

// lintTemplate checks a Helm template that is YAML once its actions are masked: queries are
// parsed and checked as in any other YAML file, and rewritten where the rewrite does not
// touch an action. It reports false when the masked text is not structured YAML either.
func (fl *fileLint) lintTemplate() bool {
	masked, masks := maskTemplate(fl.src)
	if masked == nil {
		return false
	}
	docs, err := parseYAML(masked)
	if errors.Is(err, errTooManyDocs) {
		fl.refuseDocs()
		return true
	}
	if err != nil || !structured(docs) {
		return false
	}
	fl.orig, fl.src, fl.masks = fl.src, masked, masks
	fl.walkYAMLDocs(docs)
	fl.formats = []Format{FormatHelmTemplate} // the file itself is not YAML until rendered
	fl.addFile(finding.Info, CodeSkipped, StatusSkipped,
		"a Helm template: checked with its {{ }} actions masked, so what the chart fills in was not seen; lint the output of helm template for a full check")
	fl.fix()
	return true
}

// masked reports whether the file span [start, end) touches a masked template action.
func (fl *fileLint) masked(start, end int) bool {
	for _, m := range fl.masks {
		if start < m[1] && m[0] < end {
			return true
		}
	}
	return false
}
