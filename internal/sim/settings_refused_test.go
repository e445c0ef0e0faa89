package sim

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestEmulationSettingsRefused: settings no router runs with are refused with a CannotRunError
// naming the setting, not simulated.
func TestEmulationSettingsRefused(t *testing.T) {
	tr := textTrace(tinyBlock, chatReq(0, 0, nil, tinyBlock, 1))
	_, err := Simulate(tr, withProdStack(tinyConfig(2), func(s *ProdStackSettings) { s.LoadBeta = math.NaN() }), "prodstack-loadaware")
	var cr *CannotRunError
	if want := "--loadaware-beta NaN"; !errors.As(err, &cr) || !strings.Contains(err.Error(), want) {
		t.Errorf("prodstack-loadaware: %v; want a CannotRunError containing %q", err, want)
	}
}
