package testutil

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SVG is what CheckSVG read from a chart: its size, its texts, and the style of each series
// (a polyline with class "series", by its title).
type SVG struct {
	Width, Height float64
	Texts         []SVGText
	// Series maps a series' name to its stroke colour and dash pattern.
	Series map[string]string
	// Legend are the texts inside <g id="legend">.
	Legend []string
}

// SVGText is one <text> element: its content and the box it is assumed to take.
type SVGText struct {
	Text                     string
	Left, Right, Top, Bottom float64
}

// Character widths assumed for the overflow check, in ems: wider than common sans-serif faces
// draw lower case, digits and hyphens (about 0.5), so a text that passes fits in any of them.
// The charts lay text out with the same bound; this check reads only the SVG.
const (
	svgEmNormal = 0.62
	svgEmBold   = 0.68
)

// CheckSVG parses a chart and returns what it holds, and the problems a reader would see: a
// document that is not well-formed XML, a text whose box (its length at the widths above, its
// anchor, its font size from it or an enclosing element) leaves the image, two legend entries
// that run into each other, two series drawn in the same colour and dash.
func CheckSVG(data []byte) (SVG, []error) {
	var out SVG
	out.Series = map[string]string{}
	var errs []error
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	type frame struct {
		name, size, weight, anchor string
		legend                     bool
		attrs                      map[string]string
	}
	var stack []frame
	var legend []SVGText // the legend's text boxes
	var text strings.Builder
	inTitle := 0
	var series string // the style of the polyline being read, for its title
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, append(errs, fmt.Errorf("not well-formed XML: %w", err))
		}
		switch t := tok.(type) {
		case xml.StartElement:
			f := frame{name: t.Name.Local, attrs: map[string]string{}}
			if n := len(stack); n > 0 {
				p := stack[n-1]
				f.size, f.weight, f.anchor, f.legend = p.size, p.weight, p.anchor, p.legend
			}
			for _, a := range t.Attr {
				f.attrs[a.Name.Local] = a.Value
				switch a.Name.Local {
				case "font-size":
					f.size = a.Value
				case "font-weight":
					f.weight = a.Value
				case "text-anchor":
					f.anchor = a.Value
				case "id":
					f.legend = f.legend || a.Value == "legend"
				}
			}
			switch f.name {
			case "svg":
				out.Width, _ = strconv.ParseFloat(f.attrs["width"], 64)
				out.Height, _ = strconv.ParseFloat(f.attrs["height"], 64)
			case "polyline":
				if f.attrs["class"] == "series" {
					series = f.attrs["stroke"] + " " + f.attrs["stroke-dasharray"]
				}
			case "title":
				inTitle++
			case "text":
				text.Reset()
			}
			stack = append(stack, f)
		case xml.CharData:
			if inTitle > 0 {
				if series != "" {
					name := string(t)
					if prev, ok := out.Series[name]; ok && prev != series {
						errs = append(errs, fmt.Errorf("series %q drawn in two styles: %q and %q", name, prev, series))
					}
					out.Series[name] = series
				}
				continue
			}
			if n := len(stack); n > 0 && stack[n-1].name == "text" {
				text.Write(t)
			}
		case xml.EndElement:
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			switch f.name {
			case "title":
				inTitle--
			case "polyline":
				series = ""
			case "text":
				st, err := textBox(f.attrs, f.size, f.weight, f.anchor, text.String())
				if err != nil {
					errs = append(errs, err)
					continue
				}
				out.Texts = append(out.Texts, st)
				if f.legend {
					out.Legend = append(out.Legend, st.Text)
					legend = append(legend, st)
				}
				if st.Left < 0 || st.Right > out.Width || st.Top < 0 || st.Bottom > out.Height {
					errs = append(errs, fmt.Errorf("text %q at x %.1f..%.1f, y %.1f..%.1f leaves the %gx%g image", st.Text, st.Left, st.Right, st.Top, st.Bottom, out.Width, out.Height))
				}
			}
		}
	}
	// Legend entries side by side must not run into each other: an entry cut by its neighbour
	// is no more whole than one cut by the edge.
	for i, a := range legend {
		for _, b := range legend[i+1:] {
			if a.Left < b.Right && b.Left < a.Right && a.Top < b.Bottom && b.Top < a.Bottom {
				errs = append(errs, fmt.Errorf("legend entries %q and %q overlap", a.Text, b.Text))
			}
		}
	}
	styles := map[string]string{}
	for name, st := range out.Series {
		if other, ok := styles[st]; ok {
			errs = append(errs, fmt.Errorf("series %q and %q share colour and dash %q", other, name, st))
		}
		styles[st] = name
	}
	return out, errs
}

// textBox is the box a text takes: from its baseline up a font size and down a fifth of one.
func textBox(attrs map[string]string, size, weight, anchor, s string) (SVGText, error) {
	x, err1 := strconv.ParseFloat(attrs["x"], 64)
	y, err2 := strconv.ParseFloat(attrs["y"], 64)
	fs, err3 := strconv.ParseFloat(size, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return SVGText{}, fmt.Errorf("text %q: position or size unreadable: %w", s, err)
	}
	em := svgEmNormal
	if weight == "bold" {
		em = svgEmBold
	}
	w := float64(len([]rune(s))) * fs * em
	left := x
	switch anchor {
	case "middle":
		left = x - w/2
	case "end":
		left = x - w
	}
	return SVGText{Text: s, Left: left, Right: left + w, Top: y - fs, Bottom: y + fs/5}, nil
}
