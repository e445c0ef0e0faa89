package sim

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"
)

// Route is where one request (or one sibling of an n > 1 request) went and why.
type Route struct {
	// Request is the request's place in the source (Trace.Input: its record among the trace's,
	// its request among a log's usable ones, from 0), whatever order the trace sorted it in;
	// its siblings share it.
	Request int
	// Sibling is the copy's index among the request's siblings (n, or --n), from 0; 0 for a
	// request sent once.
	Sibling int
	// Replica is the replica it was sent to, from 0 (with an added replica, Config.Replicas
	// is the added one).
	Replica int
	// PromptTokens are the request's prompt tokens; CachedTokens those found in that
	// replica's prefix cache when its prefill started (at most PromptTokens - 1: the last
	// token is always computed).
	PromptTokens, CachedTokens int
	// Reason names the branch of its rule the policy took (Policy.Route).
	Reason string
}

// RouteSpool keeps the routes of a run's replays on disk, so that writing every request's
// route (simulate --routes) costs memory that does not grow with the trace: a replay writes
// each route as its request finishes (out of order: a request waits in a queue while later
// ones finish) into a record of routeRecord bytes at the request's place in the order sent, in
// a slot of the spool's one file, through a window of routeWindow records; RouteRun.Each reads
// a slot back in order. The file is removed from its directory as soon as it is open, so no
// exit leaves it behind (where an open file cannot be removed, Close removes it).
//
// Memory: routeWindow x routeRecord bytes (64 KiB) per replay running, and the distinct
// reasons of each replay. Disk: routeRecord bytes (16) per request sent and replay, until
// Close.
type RouteSpool struct {
	f     *os.File
	left  string // the file's name, where it could not be removed while open; else ""
	slot  int    // records a slot holds
	slots atomic.Int64
}

// The spool's record: request (uint32), sibling (uint16), replica (uint16), blocks hit
// (uint32), reason (uint16: its index in the replay's reasons, plus 1; 0 for a record never
// written), two bytes unused.
const (
	routeRecord = 16
	routeWindow = 4096
)

// NewRouteSpool opens a spool in the system's temporary directory whose slots each hold the
// routes of one replay of t under c (every request sent, siblings included).
func NewRouteSpool(t *Trace, c Config) (*RouteSpool, error) {
	f, err := os.CreateTemp("", "kvcheck-routes-*")
	if err != nil {
		return nil, fmt.Errorf("routes: temporary file: %w", err)
	}
	s := &RouteSpool{f: f, slot: RequestsSent(t, c)}
	if os.Remove(f.Name()) != nil {
		s.left = f.Name()
	}
	return s, nil
}

// Close closes (and so removes) the spool's file.
func (s *RouteSpool) Close() error {
	err := s.f.Close()
	if s.left != "" {
		err = errors.Join(err, os.Remove(s.left))
	}
	return err
}

// RequestsSent is the number of requests a replay of t under c sends: every request, each
// sent as many times as it has siblings (its n, or c.Siblings).
func RequestsSent(t *Trace, c Config) int {
	n := 0
	for i := range t.Requests {
		n += siblings(&t.Requests[i], c)
	}
	return n
}

// Simulate is SimulatePolicy that also writes every request's route to slot (from 0, one per
// replay of the spool: slots already used are overwritten) and returns them as a RouteRun
// named after info (Variant and Label are for the caller to fill).
func (s *RouteSpool) Simulate(ctx context.Context, t *Trace, c Config, info PolicyInfo, slot int) (Result, RouteRun, error) {
	log := s.log(t, slot)
	res, _, err := simulateWith(t, c, info, false, &watch{ctx: ctx, routed: new(atomic.Int64)}, log)
	if err == nil {
		err = log.close()
	}
	if err != nil {
		return Result{}, RouteRun{}, err
	}
	return res, log.run(info.Name, c), nil
}

// log returns the writer of one replay's routes into slot.
func (s *RouteSpool) log(t *Trace, slot int) *routeLog {
	return &routeLog{spool: s, trace: t, base: int64(slot) * int64(s.slot) * routeRecord, win: make([]byte, routeWindow*routeRecord)}
}

// routeLog writes one replay's routes into its slot of a spool.
type routeLog struct {
	spool *RouteSpool
	trace *Trace
	base  int64 // the slot's offset in the file
	// win holds records lo to lo+routeWindow-1; written marks that some record in it is.
	win     []byte
	lo      int
	written bool
	sent    int // records the replay sends (set by close)
	reasons []string
	err     error
}

// add writes j's route.
func (l *routeLog) add(j *Job) {
	if l.err != nil {
		return
	}
	if j.seq >= l.spool.slot {
		l.err = fmt.Errorf("routes: request %d sent past the %d a replay of the trace sends", j.seq, l.spool.slot)
		return
	}
	var rec [routeRecord]byte
	if err := l.encode(rec[:], j); err != nil {
		l.err = err
		return
	}
	switch {
	case j.seq < l.lo:
		// A request that waited while later ones finished: its window is on disk already.
		_, l.err = l.spool.f.WriteAt(rec[:], l.base+int64(j.seq)*routeRecord)
		return
	case j.seq >= l.lo+routeWindow:
		if l.err = l.flush(); l.err != nil {
			return
		}
		l.lo = j.seq - j.seq%routeWindow
	}
	copy(l.win[(j.seq-l.lo)*routeRecord:], rec[:])
	l.written = true
}

// encode writes j's route as a record into rec.
func (l *routeLog) encode(rec []byte, j *Job) error {
	k := 0
	for k < len(l.reasons) && l.reasons[k] != j.reason {
		k++
	}
	if k == len(l.reasons) {
		if k >= math.MaxUint16-1 {
			return fmt.Errorf("routes: more than %d distinct reasons in one replay", k)
		}
		l.reasons = append(l.reasons, j.reason)
	}
	if j.index > math.MaxUint32 || j.hit > math.MaxUint32 {
		return fmt.Errorf("routes: request %d (%d blocks hit) does not fit a route record", j.index, j.hit)
	}
	binary.LittleEndian.PutUint32(rec[0:], uint32(j.index))
	binary.LittleEndian.PutUint16(rec[4:], uint16(j.sibling))
	binary.LittleEndian.PutUint16(rec[6:], uint16(j.rep))
	binary.LittleEndian.PutUint32(rec[8:], uint32(j.hit))
	binary.LittleEndian.PutUint16(rec[12:], uint16(k+1))
	return nil
}

// flush writes the window to the file, up to the records the slot holds, and clears it.
func (l *routeLog) flush() error {
	if !l.written {
		return nil
	}
	n := min(routeWindow, l.spool.slot-l.lo)
	_, err := l.spool.f.WriteAt(l.win[:n*routeRecord], l.base+int64(l.lo)*routeRecord)
	clear(l.win)
	l.written = false
	return err
}

// close flushes what the window holds once the replay has sent sent requests and every one
// has finished.
func (l *routeLog) close() error {
	if l.err == nil {
		l.err = l.flush()
	}
	if l.err != nil {
		return fmt.Errorf("routes: write to %s: %w", os.TempDir(), l.err)
	}
	return nil
}

// run describes the replay's routes for a RouteWriter.
func (l *routeLog) run(policy string, c Config) RouteRun {
	return RouteRun{Policy: policy, Replicas: c.Replicas, KVBlocks: c.KVBlocks, log: l}
}

// RouteRun is one replay's routes, in a RouteSpool, and what names the replay.
type RouteRun struct {
	// Policy is the policy or emulation replayed; Variant the settings it ran with ("" for
	// an idealised policy; shipped, configured, tuned, today for a router's row) and Label
	// which of them (a product's default set, the file a configured row came from).
	Policy, Variant, Label string
	// Replicas and KVBlocks are the fleet's (an added replica not counted).
	Replicas, KVBlocks int
	log                *routeLog
}

// Each calls fn with every route of the run in the order the requests were sent (input order,
// a request's siblings next to each other), reading them from the spool; it stops at fn's first
// error and returns it. A route the replay never wrote is an error: every request finishes.
func (r RouteRun) Each(fn func(Route) error) error {
	l := r.log
	if l == nil {
		return nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(l.spool.f, l.base, int64(l.spool.slot)*routeRecord), 64<<10)
	var rec [routeRecord]byte
	for k := range l.sent {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			return fmt.Errorf("routes: read back route %d of %s: %w", k, r.Policy, err)
		}
		reason := int(binary.LittleEndian.Uint16(rec[12:]))
		if reason == 0 || reason > len(l.reasons) {
			return fmt.Errorf("routes: %s: request %d of %d sent has no route", r.Policy, k, l.sent)
		}
		req := int(binary.LittleEndian.Uint32(rec[0:]))
		hit := int(binary.LittleEndian.Uint32(rec[8:]))
		rt := Route{Request: l.trace.Input(req), Sibling: int(binary.LittleEndian.Uint16(rec[4:])), Replica: int(binary.LittleEndian.Uint16(rec[6:])),
			PromptTokens: l.trace.Requests[req].InputTokens, CachedTokens: hit * l.trace.BlockSize, Reason: l.reasons[reason-1]}
		if err := fn(rt); err != nil {
			return err
		}
	}
	return nil
}

// RouteWriter takes the routes of a run's replays, one replay at a time, in the order they are
// to be written (a sweep's: its results' order).
type RouteWriter interface {
	WriteRun(r RouteRun) error
}
