package prodstack

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// TestSettingsRefused: settings no router runs with are refused with a CannotRunError
// naming the setting, not simulated.
func TestSettingsRefused(t *testing.T) {
	tr := simtest.TextTrace(simtest.Block, simtest.ChatReq(0, 0, nil, simtest.Block, 1))
	s := Shipped()
	s.LoadBeta = math.NaN()
	_, err := sim.SimulatePolicy(context.Background(), tr, simtest.Config(2), loadAware(s))
	var cr *sim.CannotRunError
	if want := "--loadaware-beta NaN"; !errors.As(err, &cr) || !strings.Contains(err.Error(), want) {
		t.Errorf("prodstack-loadaware: %v; want a CannotRunError containing %q", err, want)
	}
}
