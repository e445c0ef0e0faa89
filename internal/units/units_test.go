package units

import "testing"

func TestDuration(t *testing.T) {
	tests := []struct {
		s    float64
		want string
	}{
		{0, "0 s"}, {0.000012, "12 µs"}, {0.03, "30 ms"}, {0.0314, "31 ms"}, {0.0042, "4.2 ms"},
		{1.5, "1.5 s"}, {12, "12 s"}, {119, "119 s"},
		// 1403 s is 23.38 min; 10033 s is 2.787 h; 3 days and a quarter.
		{1403, "23 min"}, {10033, "2.8 h"}, {3.25 * 86400, "3.2 days"},
		// 9.96 rounds to 10, not "10.0".
		{9.96, "10 s"}, {-2, "-2.0 s"},
	}
	for _, tt := range tests {
		if got := Duration(tt.s); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {29371, "29371"}, {99_999, "99999"},
		// 524288 / 1e3 = 524.288; 1048576 / 1e6 = 1.048576; 12582912 / 1e6 = 12.58.
		{524_288, "524k"}, {1_048_576, "1.0M"}, {12_582_912, "12.6M"},
		// 999,600 would read "1000k": it is 1.0M.
		{999_600, "1.0M"}, {134_217_728, "134M"}, {2_000_000_000, "2.0G"},
	}
	for _, tt := range tests {
		if got := Count(tt.n); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestBytesOfPlural(t *testing.T) {
	// 1.2 GB: 1.2 x 1024^3 = 1288490188.8 bytes.
	if got := Bytes(1288490189); got != "1.2 GB" {
		t.Errorf("Bytes = %q, want 1.2 GB", got)
	}
	if got := Bytes(512); got != "512 B" {
		t.Errorf("Bytes = %q, want 512 B", got)
	}
	for _, tt := range []struct {
		n, total int64
		want     string
	}{{3, 8, "3 of 8 replicas"}, {1, 1, "1 of 1 replica"}, {0, 120, "none of 120 replicas"}} {
		if got := Of(tt.n, tt.total, "replica"); got != tt.want {
			t.Errorf("Of(%d, %d) = %q, want %q", tt.n, tt.total, got, tt.want)
		}
	}
	if got := Plural(1, "replica") + ", " + Plural(3, "replica"); got != "1 replica, 3 replicas" {
		t.Errorf("Plural = %q", got)
	}
}
