package main

import (
	"context"
	"errors"

	"github.com/kvcheck/kvcheck/internal/demo"
)

// demoCommands runs a section that is kvcheck command lines: setup starts what it needs on
// loopback, the section prints its heading and notes, runs each command and stops what it
// started.
func demoCommands(setup func(demo.Env) (*demo.Section, error)) func(context.Context, *demoSession) error {
	return func(ctx context.Context, d *demoSession) error {
		sec, err := setup(d.env())
		if err != nil {
			return err
		}
		defer d.stop(sec)
		d.heading(sec.Heading, sec.Notes...)
		for _, args := range sec.Commands {
			if err := d.exec(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	}
}

// demoTapSection taps three emulated KV-event publishers for a few seconds: its command line,
// kvcheck tap --demo, runs as demoTap.
func demoTapSection(ctx context.Context, d *demoSession) error {
	sec, err := demo.Tap(d.env())
	if err != nil {
		return err
	}
	d.heading(sec.Heading, sec.Notes...)
	return d.capture(sec.Commands[0], func(s streams) error { return demoTap(ctx, s, d.g) })
}

// demoAssessSection ends the demo with the recommendation: assess scrapes four emulated
// replicas and simulates a built-in chat trace on a fleet of their shape. In text mode
// demoAssess prints its own heading and command line.
func demoAssessSection(ctx context.Context, d *demoSession) error {
	if d.json {
		return d.capture([]string{"assess", "--demo"}, func(s streams) error {
			res, err := runAssessDemo(ctx, s, d.g)
			return d.g.write(s.Out, res, err)
		})
	}
	if d.started {
		d.g.text(d.s.Out).Line("")
	}
	d.started = true
	res, err := runAssessDemo(ctx, d.s, d.g)
	err = d.g.write(d.s.Out, res, err)
	var fe findingsError
	if errors.As(err, &fe) {
		d.g.text(d.s.Out).Line("(exit 3: %v)", err)
		return nil
	}
	return err
}
