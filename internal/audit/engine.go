package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ardanlabs/jinja"
)

// The chat-template engine is github.com/ardanlabs/jinja, made for chat templates, with the
// parts of Hugging Face's environment that it does not share set here: transformers renders
// with jinja2 (trim_blocks, lstrip_blocks, keep_trailing_newline off), a tojson that is
// Python's json.dumps with ensure_ascii off, and a strftime_now that reads the real clock
// (transformers@v4.46.0:src/transformers/utils/chat_template_utils.py:_compile_jinja_template).
// kvcheck's strftime_now reads a clock it sets, so that two renders can differ in nothing but
// the time. The engine was chosen over gonja v2 by rendering public chat templates against
// Python's jinja2 (README, "Rendering templates").

// chatTemplate is a compiled chat template.
type chatTemplate struct {
	t *jinja.Template
}

// compileChat compiles a chat template (rewritten by hfSource for the engine).
func compileChat(src string) (*chatTemplate, error) {
	src, err := hfSource(src)
	if err != nil {
		return nil, err
	}
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, err
	}
	return &chatTemplate{t: t}, nil
}

// clockCall is one strftime_now call a render made: the format it asked for.
type clockCall struct {
	format string
}

// renderInput is what one render gets: the template variables (JSON values, so that
// key order is kept as the request gave it) and the clock strftime_now reads.
type renderInput struct {
	vars map[string]jinja.Value
	now  time.Time
}

// render renders the template and returns the text and the strftime_now formats it asked for.
// A panic inside the engine (a template it cannot handle) is an error, not a crash.
func (c *chatTemplate) render(in renderInput) (out string, calls []clockCall, err error) {
	var mu sync.Mutex
	vals := make(map[string]jinja.Value, len(in.vars)+2)
	for k, v := range in.vars {
		vals[k] = v
	}
	vals["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		format := "%Y-%m-%d"
		if len(args) > 0 && args[0].IsString() {
			format = args[0].AsString()
		}
		mu.Lock()
		calls = append(calls, clockCall{format: format})
		mu.Unlock()
		return jinja.NewString(strftime(in.now, format)), nil
	})
	// A filter the engine does not have is looked up among the variables: hfSource renamed
	// tojson to this one, Python's, since the engine's indented form sorts the keys.
	vals[tojsonFilter] = jinja.NewCallable("tojson", pyToJSON)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the template engine failed: %v", p)
		}
	}()
	out, err = c.t.RenderValues(vals)
	return out, calls, err
}

// jsonValue turns JSON into an engine value, keeping the key order of objects as written
// (Python's json.loads does, and a template's tojson prints the keys in that order).
func jsonValue(raw []byte) (jinja.Value, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	v, err := jsonNext(d)
	if err != nil {
		return jinja.Undefined(), err
	}
	if d.More() {
		return jinja.Undefined(), fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func jsonNext(d *json.Decoder) (jinja.Value, error) {
	t, err := d.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			out := jinja.NewDict()
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				val, err := jsonNext(d)
				if err != nil {
					return jinja.Undefined(), err
				}
				out.AsDict().Set(k.(string), val)
			}
			_, err := d.Token()
			return out, err
		case '[':
			items := []jinja.Value{}
			for d.More() {
				val, err := jsonNext(d)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, val)
			}
			_, err := d.Token()
			return jinja.NewList(items), err
		}
	case string:
		return jinja.NewString(v), nil
	case bool:
		return jinja.NewBool(v), nil
	case json.Number:
		return jinja.FromGoValue(v), nil
	case nil:
		return jinja.None(), nil
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", t)
}

// pyToJSON is the tojson filter of transformers' environment: json.dumps(x,
// ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys).
func pyToJSON(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	o := jsonOpts{item: ", ", key: ": ", indent: -1}
	if v, ok := kw["indent"]; ok && v.IsInt() {
		o.indent = int(v.AsInt())
		o.item = ","
	} else if ok && v.IsString() {
		o.indentStr, o.indent, o.item = v.AsString(), 0, ","
	}
	if v, ok := kw["separators"]; ok && v.IsList() && v.AsList().Len() == 2 {
		a, b := v.AsList().Get(0), v.AsList().Get(1)
		if a.IsString() && b.IsString() {
			o.item, o.key = a.AsString(), b.AsString()
		}
	}
	if v, ok := kw["sort_keys"]; ok && v.IsTruthy() {
		o.sort = true
	}
	if o.indentStr == "" && o.indent >= 0 {
		o.indentStr = strings.Repeat(" ", o.indent)
	}
	var b strings.Builder
	if err := o.write(&b, args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(b.String()), nil
}

type jsonOpts struct {
	item, key string
	indent    int // -1: on one line
	indentStr string
	sort      bool
}

func (o jsonOpts) newline(b *strings.Builder, depth int) {
	if o.indent < 0 {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(o.indentStr)
	}
}

func (o jsonOpts) write(b *strings.Builder, v jinja.Value, depth int) error {
	switch {
	case v.IsUndefined(), v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloat(v.AsFloat()))
	case v.IsString():
		pyQuote(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				b.WriteString(o.item)
			}
			o.newline(b, depth+1)
			if err := o.write(b, it, depth+1); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		if o.sort {
			sortStrings(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.item)
			}
			o.newline(b, depth+1)
			pyQuote(b, k)
			b.WriteString(o.key)
			val, _ := d.Get(k)
			if err := o.write(b, val, depth+1); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte('}')
	default:
		return fmt.Errorf("tojson: a %s is not JSON serializable", v.String())
	}
	return nil
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// pyFloat prints a float as Python's repr does: the shortest text that reads back, with a
// ".0" on whole numbers and Infinity/NaN as json.dumps writes them.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Python writes 1e-05 and 1e+16: two exponent digits at least.
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		digits := exp[1:]
		if len(digits) < 2 {
			digits = "0" + digits
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// pyQuote writes s as json.dumps with ensure_ascii=False does: only the quote, the backslash
// and control characters are escaped.
func pyQuote(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

var (
	pyDays   = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	pyMonths = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
)

// strftime formats t as Python's time.strftime does in the C locale, with glibc's "-"
// flag (no padding) that templates use ("%-d %B %Y").
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		pad := true
		if format[i] == '-' && i+1 < len(format) {
			pad = false
			i++
		}
		num := func(n, width int) {
			s := strconv.Itoa(n)
			if pad {
				for len(s) < width {
					s = "0" + s
				}
			}
			b.WriteString(s)
		}
		h12 := t.Hour() % 12
		if h12 == 0 {
			h12 = 12
		}
		_, week := t.ISOWeek()
		switch format[i] {
		case 'a':
			b.WriteString(pyDays[t.Weekday()][:3])
		case 'A':
			b.WriteString(pyDays[t.Weekday()])
		case 'w':
			num(int(t.Weekday()), 1)
		case 'u':
			num((int(t.Weekday())+6)%7+1, 1)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			s := strconv.Itoa(t.Day())
			if pad && len(s) < 2 {
				s = " " + s
			}
			b.WriteString(s)
		case 'b', 'h':
			b.WriteString(pyMonths[t.Month()-1][:3])
		case 'B':
			b.WriteString(pyMonths[t.Month()-1])
		case 'm':
			num(int(t.Month()), 2)
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			num(t.Year(), 4)
		case 'C':
			num(t.Year()/100, 2)
		case 'G':
			y, _ := t.ISOWeek()
			num(y, 4)
		case 'g':
			y, _ := t.ISOWeek()
			num(y%100, 2)
		case 'V':
			num(week, 2)
		case 'H':
			num(t.Hour(), 2)
		case 'k':
			s := strconv.Itoa(t.Hour())
			if len(s) < 2 {
				s = " " + s
			}
			b.WriteString(s)
		case 'I':
			num(h12, 2)
		case 'l':
			s := strconv.Itoa(h12)
			if len(s) < 2 {
				s = " " + s
			}
			b.WriteString(s)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'f':
			num(t.Nanosecond()/1000, 6)
		case 'j':
			num(t.YearDay(), 3)
		case 'U':
			num((t.YearDay()+6-int(t.Weekday()))/7, 2)
		case 'W':
			num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2)
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'c':
			b.WriteString(strftime(t, "%a %b %e %H:%M:%S %Y"))
		case 'x', 'D':
			b.WriteString(strftime(t, "%m/%d/%y"))
		case 'X', 'T':
			b.WriteString(strftime(t, "%H:%M:%S"))
		case 'F':
			b.WriteString(strftime(t, "%Y-%m-%d"))
		case 'R':
			b.WriteString(strftime(t, "%H:%M"))
		case 'r':
			b.WriteString(strftime(t, "%I:%M:%S %p"))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if !pad {
				b.WriteByte('-')
			}
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
