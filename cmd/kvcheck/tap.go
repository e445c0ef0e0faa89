package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/usage"
)

type tapOptions struct {
	Listen       []string
	DPRanks      int
	Topic        string
	Duration     time.Duration
	Replay       []string
	Record       string
	From         []string
	HashSeed     string
	MaxBlocks    int
	TokensPerSec float64
	QueueSize    int
	MaxMessage   uint64
	FailOn       failOn
	hashSeedSet  bool
	demo         bool
}

func newTapCmd(s streams, g *globalOptions) *cobra.Command {
	o := &tapOptions{}
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
			o.hashSeedSet = cmd.Flags().Changed("hash-seed")
			if o.demo {
				if !cmd.Flags().Changed("duration") {
					o.Duration = 3 * time.Second
				}
				return runDemoTap(cmd.Context(), g.status, o)
			}
			return runTap(cmd.Context(), g.status, o, args)
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Listen, "listen", nil, "bind this endpoint and receive from publishers that dial it (repeatable)")
	f.IntVar(&o.DPRanks, "dp-ranks", 1, "data-parallel ranks per endpoint: rank r publishes on port+r")
	f.StringVar(&o.Topic, "topic", "", "subscribe to topics with this prefix only")
	f.DurationVar(&o.Duration, "duration", 60*time.Second, "how long to tap")
	f.StringSliceVar(&o.Replay, "replay", nil, "replay (ROUTER) endpoint of each publisher, in the order of the endpoints, to recover lost batches")
	f.StringVar(&o.Record, "record", "", "write everything received to this file (readable with --from)")
	f.StringSliceVar(&o.From, "from", nil, "analyse recordings instead of tapping (repeatable; merged by receive time)")
	f.StringVar(&o.HashSeed, "hash-seed", "", "the replicas' PYTHONHASHSEED, to check that hashes are reproducible with sha256_cbor")
	f.IntVar(&o.MaxBlocks, "max-blocks", events.DefaultMaxBlocks, "bound on the tracked blocks (about 140 bytes each); the least recently stored are forgotten first")
	f.Float64Var(&o.TokensPerSec, "tokens-per-sec", 0, "extrapolate the event bandwidth to this many stored tokens per second")
	f.Uint64Var(&o.MaxMessage, "max-message", events.DefaultMaxMessage, "largest message accepted (all its ZMTP frames), in bytes: a peer announcing a larger one is disconnected before it is allocated, and reported")
	f.IntVar(&o.QueueSize, "queue-size", 65536, "messages buffered between the sockets and the decoder before the tap drops (and counts) its own")
	f.StringVar((*string)(&o.FailOn), "fail-on", "", "exit 3 when a finding reaches this severity: info, warning or error")
	f.BoolVar(&o.demo, "demo", false, "tap three emulated replicas on loopback (what kvcheck demo shows)")
	_ = f.MarkHidden("demo")
	return cmd
}

func runTap(ctx context.Context, st *report.Status, o *tapOptions, args []string) (report.Result, error) {
	live := len(args) > 0 || len(o.Listen) > 0
	switch {
	case len(o.From) > 0 && live:
		return report.Result{}, usage.Errorf("give endpoints or --from recordings, not both")
	case len(o.From) == 0 && !live:
		return report.Result{}, usage.Errorf("give at least one ENDPOINT (e.g. tcp://10.0.0.5:5557), --listen ADDR or --from FILE")
	case o.DPRanks < 1:
		return report.Result{}, usage.Errorf("--dp-ranks must be at least 1, got %d", o.DPRanks)
	case o.Duration <= 0:
		return report.Result{}, usage.Errorf("--duration must be positive, got %s", o.Duration)
	case o.MaxBlocks < 1:
		return report.Result{}, usage.Errorf("--max-blocks must be positive, got %d", o.MaxBlocks)
	case o.MaxMessage < 1<<10:
		return report.Result{}, usage.Errorf("--max-message must be at least 1024 bytes, got %d", o.MaxMessage)
	case o.Record != "" && !live:
		return report.Result{}, usage.Errorf("--record needs endpoints to tap")
	}
	opts := events.Options{MaxBlocks: o.MaxBlocks, TokensPerSec: o.TokensPerSec, MaxMessage: o.MaxMessage, Ordered: true}
	if o.hashSeedSet {
		seed := o.HashSeed
		opts.HashSeed = &seed
	}
	r, err := events.RunTap(ctx, st, events.TapRun{
		From: o.From, Endpoints: o.endpoints(args), Topic: o.Topic, QueueSize: o.QueueSize, MaxMessage: o.MaxMessage,
		Logger: slog.New(slog.NewTextHandler(st.Writer(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Record: o.Record, Duration: o.Duration, Options: opts,
	})
	if err != nil {
		return report.Result{}, err
	}
	res := report.Tap(r)
	if len(o.From) == 0 && r.NoneConnected() {
		// Every number above is zero because nothing was measured, not because the stream is
		// quiet: that is a failed run, whatever --fail-on says.
		return res, fmt.Errorf("tap: none of the %d endpoints could be reached, nothing was measured (see the findings)", len(r.Publishers))
	}
	return res, nil
}

// endpoints are the publishers a live tap reads.
func (o *tapOptions) endpoints(args []string) events.Endpoints {
	return events.Endpoints{Dial: args, Replay: o.Replay, Listen: o.Listen, Ranks: o.DPRanks}
}
