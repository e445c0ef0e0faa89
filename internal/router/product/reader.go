package product

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Reader overlays a router's values (Facts.Values) on the shipped settings, field by field,
// and records each value that differs from the shipped one as a change, and each it cannot
// read as a note (the row keeps the shipped value).
type Reader struct {
	Values map[string]string
	Where  string
	// Changes are the values set away from the shipped ones, each with where.
	Changes []Change
	// Notes say which values could not be read, and that the row keeps the shipped value for
	// them.
	Notes []string
	// Unread says the same of the values that could not be read, for a router that gets no
	// row (nothing is simulated with the shipped value there).
	Unread []string
}

// NewReader reads f's values.
func NewReader(f Facts) *Reader { return &Reader{Values: f.Values, Where: f.Where()} }

// Refuse records a value that is not the kind the setting takes: the row runs with the
// shipped value, and says so.
func (r *Reader) Refuse(key, val, want string, shipped any) {
	r.Notes = append(r.Notes, fmt.Sprintf("%s %q in %s is not %s: simulated with the shipped %v; fix the value to get these figures for it",
		key, val, r.Where, want, shipped))
	r.Unread = append(r.Unread, fmt.Sprintf("%s %q in %s is not %s: kvcheck could not read it; fix the value", key, val, r.Where, want))
}

// Note records that key was set to val in the file.
func (r *Reader) Note(key, val string) {
	r.Changes = append(r.Changes, Change{Setting: key, Value: val, Why: "set in " + r.Where})
}

// Float reads key as a number (ParseFloat) into dst.
func (r *Reader) Float(key string, dst *float64) {
	v, ok := r.Values[key]
	if !ok {
		return
	}
	x, err := ParseFloat(v)
	if err != nil {
		r.Refuse(key, v, "a number", *dst)
		return
	}
	if x == *dst {
		return
	}
	*dst = x
	r.Note(key, v)
}

// Int reads key as a whole number into dst.
func (r *Reader) Int(key string, dst *int) {
	v, ok := r.Values[key]
	if !ok {
		return
	}
	x, err := strconv.Atoi(Unquote(v))
	if err != nil {
		r.Refuse(key, v, "a whole number", *dst)
		return
	}
	if x == *dst {
		return
	}
	*dst = x
	r.Note(key, v)
}

// Str reads key as text into dst.
func (r *Reader) Str(key string, dst *string) {
	v, ok := r.Values[key]
	if !ok || v == *dst {
		return
	}
	*dst = v
	r.Note(key, v)
}

// Bool reads key as true or false into dst.
func (r *Reader) Bool(key string, dst *bool) {
	v, ok := r.Values[key]
	if !ok {
		return
	}
	b, err := strconv.ParseBool(strings.ToLower(strings.Trim(v, `"'`)))
	if err != nil {
		r.Refuse(key, v, "true or false", *dst)
		return
	}
	if b == *dst {
		return
	}
	*dst = b
	r.Note(key, v)
}

// Result is the router's rows: one per policy with settings s, or, when it runs none, one
// saying why (skip) with the values that could not be read.
func (r *Reader) Result(policies []string, s Settings, skip string) []Configured {
	if len(policies) == 0 && skip != "" {
		// The values kvcheck could not read stay said on the router's line.
		return []Configured{{Where: r.Where, NotSimulated: skip, Notes: r.Unread}}
	}
	out := make([]Configured, 0, len(policies))
	for _, p := range policies {
		out = append(out, Configured{Policy: p, Where: r.Where, Settings: s, Changes: r.Changes, Notes: r.Notes})
	}
	return out
}

// Unquote trims the spaces and quotes around a value as files write it.
func Unquote(v string) string { return strings.Trim(strings.TrimSpace(v), `"'`) }

// ParseFloat reads a number as YAML, flags and Python write it: 1.5, "2", inf, .inf, -inf,
// float("inf"), float("-inf"). NaN is no setting's value and is refused, as is any other text.
func ParseFloat(v string) (float64, error) {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(v), `"'`))
	if in, ok := strings.CutPrefix(t, "float("); ok {
		if in, ok = strings.CutSuffix(in, ")"); ok {
			t = strings.Trim(strings.TrimSpace(in), `"'`)
		}
	}
	switch t {
	case "inf", ".inf", "+inf", "+.inf", "infinity", "+infinity":
		return math.Inf(1), nil
	case "-inf", "-.inf", "-infinity":
		return math.Inf(-1), nil
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(x) {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	return x, nil
}

// Num writes a number as the configuration formats want it: 2, 0.5, 1.5.
func Num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// FlowList writes YAML flow-list items, quoting those YAML would read as numbers or booleans.
func FlowList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		if _, err := strconv.ParseFloat(s, 64); err == nil || s == "true" || s == "false" {
			s = `"` + s + `"`
		}
		out[i] = s
	}
	return strings.Join(out, ", ")
}
