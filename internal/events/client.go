package events

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Source is one place to receive events from.
type Source struct {
	// Endpoint is a ZMQ endpoint such as tcp://10.0.0.5:5557.
	Endpoint string
	// Listen binds the endpoint instead of dialling it, for publishers that dial a collector.
	Listen bool
	// Replay, when set, is the publisher's replay (ROUTER) endpoint, asked for missing batches.
	Replay string
}

// Config configures a Tap.
type Config struct {
	Sources []Source
	// Topic is the subscription prefix; empty receives every topic.
	Topic string
	// QueueSize bounds the messages waiting between the sockets and the decoder; beyond it the
	// tap drops and counts them as its own drops (0 means 65536).
	QueueSize int
	// Recorder, when set, receives every message as it arrived.
	Recorder *Recorder
	// Logger receives connection progress; nil discards it.
	Logger *slog.Logger
	// Now returns the receive time; nil means time.Now.
	Now func() time.Time
	// Observe, when set, is called with each message after it is accounted, on the tap's
	// goroutine; tests use it to wait for a condition instead of sleeping.
	Observe func(*Message)
	// MaxMessage bounds the size of one ZMTP message, all its frames (0 means
	// DefaultMaxMessage): a peer announcing a larger one is disconnected before anything is
	// allocated for the frame that crosses the bound, and counted.
	MaxMessage uint64
}

type received struct {
	msg    Message
	frames [][]byte
}

// Tap receives from every source until ctx ends, feeding c, and returns when all is accounted.
// A dead or restarting source never stalls the others: each has its own socket and dial loop.
func Tap(ctx context.Context, cfg Config, c *Collector) error {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 65536
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	started := cfg.Now()
	// The receivers stop with ctx, or when this function stops early (a failed recording).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan received, cfg.QueueSize)
	recovered := make(chan received, 1024)
	links := make([]link, len(cfg.Sources))
	replays := map[string]chan topicGap{}
	var wg sync.WaitGroup
	for i, s := range cfg.Sources {
		c.Register(s.Endpoint)
		wg.Go(func() { receive(ctx, cfg, s, queue, &links[i]) })
		if s.Replay != "" {
			gaps := make(chan topicGap, 64)
			replays[s.Endpoint] = gaps
			wg.Go(func() { replayLoop(ctx, cfg, s, gaps, recovered) })
		}
	}
	handle := func(r received) {
		if cfg.Recorder != nil {
			cfg.Recorder.Message(&r.msg, r.frames)
		}
		gap, ok := c.Add(&r.msg)
		if cfg.Observe != nil {
			cfg.Observe(&r.msg)
		}
		if ok && !r.msg.Recovered {
			if ch := replays[r.msg.Source]; ch != nil {
				select {
				case ch <- topicGap{gap, r.msg.Topic}:
				default: // the replay worker is busy; this gap stays counted as lost
				}
			}
		}
	}
	flush := time.NewTicker(time.Second)
	defer flush.Stop()
	var err error
loop:
	for {
		select {
		case r := <-queue:
			handle(r)
			// A busy stream keeps the queue non-empty: take what is already there with
			// plain receives, which cost a fraction of this four-way select, and come back
			// to the select (the flush ticker, recovered batches, the end) at least every
			// drainBatch messages.
			for range drainBatch {
				select {
				case r := <-queue:
					handle(r)
					continue
				default:
				}
				break
			}
		case r := <-recovered:
			handle(r)
		case <-flush.C:
			if cfg.Recorder != nil {
				if err = cfg.Recorder.Flush(); err != nil {
					break loop
				}
			}
		case <-ctx.Done():
			break loop
		}
	}
	cancel()
	wg.Wait()
	// Account for what was received before the end.
	for {
		select {
		case r := <-queue:
			handle(r)
			continue
		case r := <-recovered:
			handle(r)
			continue
		default:
		}
		break
	}
	for i, s := range cfg.Sources {
		if n := links[i].drops.Load(); n > 0 {
			c.OwnDrops(s.Endpoint, n)
			if cfg.Recorder != nil {
				cfg.Recorder.OwnDrops(s.Endpoint, n)
			}
		}
		if s.Listen {
			c.ListenPeers(s.Endpoint, int(links[i].peers.most.Load()))
		}
		if n := links[i].oversize.Load(); n > 0 {
			c.OversizeMessages(s.Endpoint, n, links[i].largest.Load())
		}
		var lastErr string
		if e := links[i].lastErr.Load(); e != nil {
			lastErr = *e
		}
		c.Connection(s.Endpoint, s.Listen, links[i].connects.Load(), lastErr)
	}
	if cfg.Recorder != nil {
		cfg.Recorder.Session(started.UnixNano(), cfg.Now().UnixNano())
		if ferr := cfg.Recorder.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

// drainBatch bounds the messages the tap takes from its queue between two looks at its other
// channels: at the tap's rate of a few µs a message, the ticker and the end wait at most a few
// milliseconds.
const drainBatch = 256

// backoff doubles from 100 ms to 2 s between attempts.
func backoff(d time.Duration) time.Duration {
	if d == 0 {
		return 100 * time.Millisecond
	}
	return min(2*d, 2*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// receive runs one source's socket: connect (with our own backoff, since zmq4's dial gives up
// after a few tries and its reconnect races with Close), receive until the connection fails,
// and start again.
// connectError words a failed dial or bind for people: the network error itself when there is
// one, without zmq4's wrapping and our internal transport name.
func connectError(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	return ourScheme.ReplaceAllString(err.Error(), "tcp://")
}

// link is what a receiver learns about its connection, read by Tap when it ends.
type link struct {
	drops    atomic.Uint64
	connects atomic.Uint64
	lastErr  atomic.Pointer[string]
	// oversize counts connections dropped for a message over the bound; largest is the
	// largest size announced.
	oversize, largest atomic.Uint64
	// peers counts the publishers connected to a listener.
	peers peerGauge
}

func receive(ctx context.Context, cfg Config, s Source, queue chan<- received, l *link) {
	var wait time.Duration
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(context.WithValue(ctx, peersKey{}, &l.peers))
		sock := zmq4.NewSub(sctx, zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(2*time.Second))
		var err error
		if s.Listen {
			err = sock.Listen(zmqEndpoint(s.Endpoint, cfg.MaxMessage))
		} else {
			err = sock.Dial(zmqEndpoint(s.Endpoint, cfg.MaxMessage))
		}
		if err == nil {
			err = sock.SetOption(zmq4.OptionSubscribe, cfg.Topic)
		}
		if err != nil {
			_ = sock.Close()
			cancel()
			if ctx.Err() != nil {
				// The tap is stopping: this attempt was cut short, and its error would
				// hide why the earlier ones failed.
				return
			}
			msg := connectError(err)
			l.lastErr.Store(&msg)
			cfg.Logger.Debug("connect failed", "endpoint", s.Endpoint, "err", err)
			wait = backoff(wait)
			if !sleepCtx(ctx, wait) {
				return
			}
			continue
		}
		cfg.Logger.Info("connected", "endpoint", s.Endpoint, "listen", s.Listen)
		l.connects.Add(1)
		wait = 0
		// dropped lists what the tap dropped since the last message it queued; the next one
		// carries it to the collector, so the tap's own drops are never taken for loss.
		var dropped []DropRun
		for {
			m, err := sock.Recv()
			if err != nil {
				if tooLarge := (*MessageTooLargeError)(nil); errors.As(err, &tooLarge) {
					l.oversize.Add(1)
					if tooLarge.Size > l.largest.Load() { // this goroutine is the only writer
						l.largest.Store(tooLarge.Size)
					}
					cfg.Logger.Warn("message over the bound", "endpoint", s.Endpoint, "err", err)
				}
				if s.Listen && ctx.Err() == nil {
					// One peer's connection ended; the listener and the other peers'
					// connections are fine. Rebinding would cut those off too.
					cfg.Logger.Debug("peer connection ended", "endpoint", s.Endpoint, "err", err)
					continue
				}
				if ctx.Err() == nil {
					cfg.Logger.Info("connection lost, reconnecting", "endpoint", s.Endpoint, "err", err)
				}
				break
			}
			frames := m.Frames
			if len(frames) > maxFrames {
				// Counted as malformed with its real frame count; recorded with the first
				// maxFrames frames only, so the recording holds nothing its reader refuses.
				frames = frames[:maxFrames]
			}
			r := received{msg: FromFrames(s.Endpoint, frames, cfg.Now().UnixNano()), frames: frames}
			r.msg.Frames = len(m.Frames)
			r.msg.OwnDropped = dropped
			select {
			case queue <- r:
				dropped = nil
			default:
				l.drops.Add(1)
				dropped = addDrop(dropped, frames)
			}
		}
		_ = sock.Close()
		cancel()
		if !sleepCtx(ctx, backoff(0)) {
			return
		}
	}
}

type topicGap struct {
	gap   Gap
	topic []byte
}

// replayEnd is the sequence value of the replay end marker (-1 as 8 bytes).
const replayEnd = ^uint64(0)

// replayLoop asks s's replay ROUTER for each reported gap and feeds back what it recovers.
func replayLoop(ctx context.Context, cfg Config, s Source, gaps <-chan topicGap, out chan<- received) {
	for {
		select {
		case <-ctx.Done():
			return
		case tg := <-gaps:
			g := tg.gap
			ms, err := replay(ctx, s.Replay, g.From, g.To, cfg.Now, cfg.MaxMessage)
			if err != nil {
				cfg.Logger.Warn("replay failed", "endpoint", s.Replay, "from", g.From, "to", g.To, "err", err)
			}
			for _, rec := range ms {
				r := received{msg: rec.Message, frames: rec.Frames}
				r.msg.Source = s.Endpoint
				if len(r.msg.Topic) == 0 {
					// The pre-0.25.1 reply shape carries no topic: it is the gap's.
					r.msg.Topic, r.frames[0] = tg.topic, tg.topic
				}
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

// Replay asks a vLLM replay ROUTER (SPEC §1.8) for batches from..to with a DEALER socket and
// returns those it sent in that range. Both reply shapes are understood: [seq, payload] up to
// vLLM 0.25.1 and [topic, seq, payload] after, each after an empty delimiter frame.
func Replay(ctx context.Context, endpoint string, from, to uint64, now func() time.Time) ([]Record, error) {
	return replay(ctx, endpoint, from, to, now, DefaultMaxMessage)
}

func replay(ctx context.Context, endpoint string, from, to uint64, now func() time.Time, maxMessage uint64) ([]Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sock := zmq4.NewDealer(ctx, zmq4.WithDialerMaxRetries(0), zmq4.WithTimeout(5*time.Second))
	defer func() { _ = sock.Close() }()
	if err := sock.Dial(zmqEndpoint(endpoint, maxMessage)); err != nil {
		return nil, fmt.Errorf("dial replay %s: %w", endpoint, err)
	}
	start := binary.BigEndian.AppendUint64(nil, from)
	if err := sock.Send(zmq4.NewMsgFrom([]byte{}, start)); err != nil {
		return nil, fmt.Errorf("send replay request to %s: %w", endpoint, err)
	}
	var out []Record
	for {
		m, err := sock.Recv()
		if err != nil {
			return out, fmt.Errorf("receive replay from %s: %w", endpoint, err)
		}
		fr := m.Frames
		if len(fr) > 0 && len(fr[0]) == 0 {
			fr = fr[1:]
		}
		var frames [][]byte
		switch len(fr) {
		case 2:
			frames = [][]byte{nil, fr[0], fr[1]}
		case 3:
			frames = fr
		default:
			return out, fmt.Errorf("replay reply from %s has %d frames, want 2 or 3 after the delimiter", endpoint, len(fr))
		}
		if len(frames[1]) != 8 {
			return out, errors.New("replay reply has a sequence frame that is not 8 bytes")
		}
		seq := binary.BigEndian.Uint64(frames[1])
		if seq == replayEnd {
			return out, nil
		}
		if seq < from || seq > to {
			continue
		}
		msg := FromFrames("", frames, now().UnixNano())
		msg.Recovered = true
		out = append(out, Record{Message: msg, Frames: frames})
	}
}
