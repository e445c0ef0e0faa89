package assess

import (
	"context"
	"time"

	"github.com/kvcheck/kvcheck/internal/assess/rank"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// Rank replays every router emulation (o.Routers, else router.Shipped()) on the traffic and
// fleet the assessment replays, as shipped, as the files configure it and as kvcheck would tune
// it, and ranks them (package rank states the rule). The warm-up is the replay's (the first
// half of the requests); with no emulation to replay there is no ranking; with o.AddReplica every replay, today's included, adds one empty
// replica at o.AddReplicaAt. A trace of lengths only gives no ranking: it cannot show reuse.
func Rank(ctx context.Context, t *sim.Trace, sh Shape, o Options, files *product.Files) (*rank.Ranking, error) {
	if !t.PrefixInfo || len(t.Requests) == 0 {
		return nil, nil
	}
	if o.Today == "" {
		o.Today = DefaultToday
	}
	routers := o.Routers
	if routers == nil {
		routers = router.Shipped()
	}
	base := Base(len(t.Requests) / 2)
	base.Replicas = sh.Replicas
	base.KVBlocks = int(min(sh.KVTokens/int64(t.BlockSize), int64(^uint32(0)>>1)))
	if o.AddReplica {
		if after, last := t.AfterEnd(time.Duration(o.AddReplicaAt * float64(time.Second))); after {
			return nil, usage.Errorf("--add-replica-at %s is after the traffic's last request (at %s): no replica would be added; give a time up to %s",
				time.Duration(o.AddReplicaAt*float64(time.Second)), last, last)
		}
		base.AddReplicaAt = o.AddReplicaAt
	}
	tr := product.TrafficOf(t, sh.Replicas, sh.KVTokens, o.AddReplica)
	cands := rank.Candidates(routers, tr, files)
	if len(cands) == 0 {
		return nil, nil
	}
	hot := o.Thresholds.HotSpot
	rk, err := rank.Run(ctx, t, rank.Setup{Base: base, Today: o.Today, TodayRouters: o.TodayRouters, TodayFrom: o.TodayFrom, TodayNotes: o.TodayNotes,
		NotSimulated: files.NotSimulatedRouters(), HotSpot: hot, Progress: o.Progress}, cands)
	if err != nil {
		return nil, err
	}
	return rk, nil
}
