package assess

import (
	"context"
	"reflect"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestRankNotSimulated: the routers the files set up that get no row reach the ranking, which
// lists them with where and why.
func TestRankNotSimulated(t *testing.T) {
	ns := product.NotSimulated{Product: prodstack.ID, Where: "values.yaml:1", Reason: `routingLogic "fancy" is not one production-stack's router knows`,
		Notes: []string{`--kv-aware-threshold "lots" in values.yaml:1 is not a whole number: kvcheck could not read it; fix the value`}}
	files := &product.Files{NotSimulated: []product.NotSimulated{ns}}
	sh := Shape{Replicas: 2, KVTokens: 16000, ReplicasFrom: advise.ShapeFlag}
	rk, err := Rank(context.Background(), oneSharedBlock(), sh, Options{Routers: []sim.PolicyInfo{{Name: "round-robin"}}, Thresholds: advise.DefaultThresholds()}, files)
	if err != nil {
		t.Fatal(err)
	}
	if rk == nil || len(rk.NotSimulated) != 1 || !reflect.DeepEqual(rk.NotSimulated[0], ns) {
		t.Errorf("ranking's routers not simulated: %+v, want [%+v]", rk, ns)
	}
}
