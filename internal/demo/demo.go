// Package demo is the emulated-fleet walkthrough that kvcheck demo and kvcheck assess --demo
// run: the shapes of the emulated vLLM replicas each section starts on loopback, the KV-event
// publishers and their traffic for the tap section, the synthetic traces the simulate and
// assess sections replay, the input files of the audit and lint sections, the command lines
// the demo prints, and the Runner that runs the sections. The commands themselves run through
// the Exec cmd/kvcheck gives the Runner; nothing here leaves the machine.
package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

// files are the demo's own inputs: a request log and a prompt template for audit, an old-style
// Grafana dashboard for lint, and a gateway, a router and an engine configuration for lint.
//
//go:embed testdata
var files embed.FS

// Inputs writes the demo's input files into dir, created if need be and kept, or when dir is
// empty into a new temporary directory that remove deletes. It returns the directory used.
func Inputs(dir string) (used string, remove func() error, err error) {
	remove = func() error { return nil }
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", remove, fmt.Errorf("--dir: %w", err)
		}
	} else {
		tmp, err := os.MkdirTemp("", "kvcheck-demo-")
		if err != nil {
			return "", remove, fmt.Errorf("demo input files: %w", err)
		}
		dir, remove = tmp, func() error { return os.RemoveAll(tmp) }
	}
	return dir, remove, WriteFiles(dir)
}

// WriteFiles copies the demo's input files into dir.
func WriteFiles(dir string) error {
	return fs.WalkDir(files, "testdata", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return fmt.Errorf("demo input files: %w", err)
		}
		return nil
	})
}

// HitrateFleet is the hitrate section's fleet: four replicas, one colder than the rest (mostly
// unique prompts) and one still on vLLM 0.9.1's metric names.
func HitrateFleet(seed uint64) []fleet.Config {
	cold := fleet.DefaultWorkload
	cold.SharedFraction = 0.15
	cold.SharedPrefixes = 32
	cfgs := fleet.Uniform(4, fleet.Config{Seed: seed, WarmupSteps: 2000})
	cfgs[2].Version = "0.9.1"
	cfgs[3].Workload = cold
	return cfgs
}

// hitrateNote says what sets a replica of HitrateFleet apart, "" for an ordinary one.
func hitrateNote(replica string) string {
	switch replica {
	case "replica-2":
		return " (old metric names)"
	case "replica-3":
		return " (mostly unique prompts: colder)"
	}
	return ""
}

// hitrateFleetOptions runs cfgs 5 steps every 5 ms at 0.3 arrivals per step: about 300
// requests per second per replica, enough to move every counter inside a few seconds.
func hitrateFleetOptions(cfgs []fleet.Config) fleet.Options {
	return fleet.Options{Replicas: cfgs, Tick: 5 * time.Millisecond, StepsPerTick: 5}
}

// AuditReplica is the audit section's replica: block size 64, as FlashMLA uses, and the Llama
// 3.1 date line in its chat template, so the "Today Date" line falls in block zero.
func AuditReplica(seed uint64) fleet.Config {
	return fleet.Config{Name: "replica-a", BlockSize: 64, DateLine: true, Seed: seed}
}

// CommandLine writes arguments as a POSIX shell would need them, quoting only where necessary.
func CommandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
