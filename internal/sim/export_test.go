package sim

// SpillTexts returns o with MemViewBytes lowered to n, for tests outside the package.
func SpillTexts(o RequestLogOptions, n int64) RequestLogOptions {
	o.memViewBytes = n
	return o
}

// WithText is withText, for tests outside the package.
func (v *View) WithText(into *View, buf *[]byte) (*View, error) { return v.withText(into, buf) }
