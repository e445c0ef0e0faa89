package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/report"
)

type tapOptions struct {
	run      events.TapRun
	hashSeed string
	FailOn   finding.FailOn
	demo     bool
}

func newTapCmd(s streams, g *globalOptions) *cobra.Command {
	o := &tapOptions{}
	r := &o.run
	cmd := &cobra.Command{
		Use:   "tap [ENDPOINT...]",
		Short: "Measure the KV-event stream: bandwidth, silent loss, replay, duplicated work, hash parity",
		Long: `tap subscribes to vLLM's ZMQ KV-event publishers (--kv-events-config) and reports whether the
stream is healthy and what it reveals about the fleet: batches lost at the publisher's high-water
mark (only sequence numbers reveal them), restarts, wire era and hash form, bandwidth, prefill
duplicated across replicas, re-stores after eviction, block-zero diversity, and whether the
block hashes are reproducible (sha256_cbor with --hash-seed) and identical across replicas.

vLLM binds its publisher (tcp://*:5557 by default): give the replicas' endpoints to dial. For
publishers that dial a collector, use --listen. Ctrl-C stops early and still prints the report.

` + exitCodesHelp,
		Example: `  kvcheck tap tcp://10.0.0.5:5557 tcp://10.0.0.6:5557 --duration 2m --hash-seed 0
  kvcheck tap tcp://10.0.0.5:5557 --dp-ranks 2 --replay tcp://10.0.0.5:5560 --record capture.kvtap
  kvcheck tap --from capture-a.kvtap --from capture-b.kvtap -o json`,
		RunE: g.command(func(cmd *cobra.Command, args []string) (report.Result, error) {
			r.Endpoints.Dial = args
			if cmd.Flags().Changed("hash-seed") {
				r.Options.HashSeed = &o.hashSeed
			}
			if o.demo {
				if !cmd.Flags().Changed("duration") {
					r.Duration = 3 * time.Second
				}
				p, err := demo.StartPublishers(cmd.Context())
				if err != nil {
					return report.Result{}, err
				}
				// Loopback publishers that fail to close do not change what the tap saw.
				defer func() { _ = p.Close() }()
				return runTap(cmd.Context(), g.status, p.Tap(*r))
			}
			return runTap(cmd.Context(), g.status, *r)
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&r.Endpoints.Listen, "listen", nil, "bind this endpoint and receive from publishers that dial it (repeatable)")
	f.IntVar(&r.Endpoints.Ranks, "dp-ranks", 1, "data-parallel ranks per endpoint: rank r publishes on port+r")
	f.StringVar(&r.Topic, "topic", "", "subscribe to topics with this prefix only")
	f.DurationVar(&r.Duration, "duration", 60*time.Second, "how long to tap")
	f.StringSliceVar(&r.Endpoints.Replay, "replay", nil, "replay (ROUTER) endpoint of each publisher, in the order of the endpoints, to recover lost batches")
	f.StringVar(&r.Record, "record", "", "write everything received to this file (readable with --from)")
	f.StringSliceVar(&r.From, "from", nil, "analyse recordings instead of tapping (repeatable; merged by receive time)")
	f.StringVar(&o.hashSeed, "hash-seed", "", "the replicas' PYTHONHASHSEED, to check that hashes are reproducible with sha256_cbor")
	f.IntVar(&r.Options.MaxBlocks, "max-blocks", events.DefaultMaxBlocks, "bound on the tracked blocks (about 145 bytes each); the least recently stored are forgotten first")
	f.Float64Var(&r.Options.TokensPerSec, "tokens-per-sec", 0, "extrapolate the event bandwidth to this many stored tokens per second")
	f.Uint64Var(&r.MaxMessage, "max-message", events.DefaultMaxMessage, "largest message accepted (all its ZMTP frames), in bytes: a peer announcing a larger one is disconnected before it is allocated, and reported")
	f.IntVar(&r.QueueSize, "queue-size", 65536, "messages buffered between the sockets and the decoder before the tap drops (and counts) its own")
	f.StringVar((*string)(&o.FailOn), "fail-on", "", "exit 3 when a finding reaches this severity: info, warning or error")
	f.BoolVar(&o.demo, "demo", false, "tap three emulated replicas on loopback (what kvcheck demo shows)")
	_ = f.MarkHidden("demo")
	return cmd
}

// runTap runs one tap; a report is written even when no endpoint could be reached.
func runTap(ctx context.Context, st *report.Status, t events.TapRun) (report.Result, error) {
	r, err := t.Run(ctx, st, st.Writer())
	if r == nil {
		return report.Result{}, err
	}
	return report.Tap(r), err
}
