package fleet

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kvcheck/kvcheck/internal/blockhash"
	"github.com/kvcheck/kvcheck/internal/events"
)

// PublisherConfig describes an emulated vLLM KV-event publisher (SPEC §1).
type PublisherConfig struct {
	// Endpoint is bound by the PUB socket; "" means tcp://127.0.0.1:0 (a free port).
	Endpoint string
	// Connect dials Endpoint instead of binding it, as vLLM does for an endpoint without "*",
	// so the tap must listen (kvcheck tap --listen).
	Connect bool
	// Topic is sent as the first frame of every message.
	Topic string
	// Version is the vLLM version whose wire dialect is spoken, e.g. "0.23.0" (positional
	// arrays) or "0.26.0" (maps); "" means "0.26.0".
	Version string
	// HWM is the PUB send high-water mark in messages; 0 means vLLM's 100000.
	HWM int
	// BinHashes sends whole digests (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0).
	BinHashes bool
	// Seed is the PYTHONHASHSEED; nil means unseeded: a random NONE_HASH, as in a vLLM
	// process started without one.
	Seed *string
	// BlockSize is the KV block size in tokens; 0 means 16.
	BlockSize int
	// DPRank is the data-parallel rank put in every batch.
	DPRank int
	// Replay, when true, also binds a replay ROUTER keeping ReplayBuffer batches, on
	// ReplayEndpoint or, when that is "", on a free port.
	Replay         bool
	ReplayEndpoint string
	ReplayBuffer   int
}

// Publisher is an emulated vLLM KV-event publisher on loopback.
type Publisher struct {
	cfg    PublisherConfig
	wire   events.Wire
	none   blockhash.Digest
	pub    zmq4.Socket
	router zmq4.Socket
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu  sync.Mutex
	seq uint64
	buf []pubBuffered
}

type pubBuffered struct {
	seq     uint64
	payload []byte
}

// pubStoredFields maps a vLLM version to the positional length of its BlockStored (SPEC §1.5).
func pubStoredFields(version string) (fields int, era events.Era, err error) {
	var major, minor, patch int
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch); err != nil {
		if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
			return 0, 0, fmt.Errorf("vLLM version %q: want MAJOR.MINOR[.PATCH]", version)
		}
	}
	if major != 0 || minor < 9 {
		return 0, 0, fmt.Errorf("vLLM version %q: KV events exist from 0.9.0", version)
	}
	v := minor*100 + patch
	switch {
	case v >= 2400:
		return 12, events.EraMap, nil
	case v >= 2200:
		return 12, events.EraArray, nil
	case v >= 2000:
		return 10, events.EraArray, nil
	case v >= 1700:
		return 9, events.EraArray, nil
	case v >= 1400:
		return 8, events.EraArray, nil
	case v >= 1002:
		return 7, events.EraArray, nil
	}
	return 6, events.EraArray, nil
}

// NewPublisher binds an emulated publisher. Close it when done.
func NewPublisher(ctx context.Context, cfg PublisherConfig) (*Publisher, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = "tcp://127.0.0.1:0"
	}
	if cfg.Version == "" {
		cfg.Version = "0.26.0"
	}
	if cfg.HWM == 0 {
		cfg.HWM = 100000
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 16
	}
	if cfg.ReplayBuffer == 0 {
		cfg.ReplayBuffer = 10000
	}
	fields, era, err := pubStoredFields(cfg.Version)
	if err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg, wire: events.Wire{Era: era, StoredFields: fields, BinHashes: cfg.BinHashes, TwoElements: strings.HasPrefix(cfg.Version, "0.9.0")}}
	if cfg.Seed != nil {
		p.none = blockhash.NoneHash(*cfg.Seed)
	} else if _, err := rand.Read(p.none[:]); err != nil {
		return nil, fmt.Errorf("draw NONE_HASH: %w", err)
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.pub = zmq4.NewPub(ctx)
	if err := p.pub.SetOption(zmq4.OptionHWM, cfg.HWM); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("set publisher high-water mark: %w", err)
	}
	if cfg.Connect {
		// Dial in the background with retries: the collector may come up later.
		p.done.Go(func() {
			for ctx.Err() == nil {
				if p.pub.Dial(cfg.Endpoint) == nil {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	} else if err := p.pub.Listen(cfg.Endpoint); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("bind publisher %s: %w", cfg.Endpoint, err)
	}
	if cfg.Replay {
		p.router = zmq4.NewRouter(ctx)
		ep := cfg.ReplayEndpoint
		if ep == "" {
			ep = "tcp://127.0.0.1:0"
		}
		if err := p.router.Listen(ep); err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("bind replay socket: %w", err)
		}
		p.done.Go(p.pubServeReplay)
	}
	return p, nil
}

// Endpoint returns the tcp:// address the publisher is bound to (or dials).
func (p *Publisher) Endpoint() string {
	if p.cfg.Connect {
		return p.cfg.Endpoint
	}
	return pubAddr(p.pub)
}

// ReplayEndpoint returns the replay ROUTER's address, or "" without replay.
func (p *Publisher) ReplayEndpoint() string {
	if p.router == nil {
		return ""
	}
	return pubAddr(p.router)
}

func pubAddr(s zmq4.Socket) string {
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		return "tcp://" + a.String()
	}
	return ""
}

// Sent returns how many batches were handed to the socket (the next sequence number).
func (p *Publisher) Sent() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

// Close stops the publisher and its replay socket.
func (p *Publisher) Close() error {
	p.cancel()
	var errs []error
	if p.pub != nil {
		errs = append(errs, p.pub.Close())
	}
	if p.router != nil {
		errs = append(errs, p.router.Close())
	}
	p.done.Wait()
	return errors.Join(errs...)
}

// Stored builds the BlockStored event this engine sends for a request's tokens that start at
// token 0: every full block, hashed with sha256_cbor from this publisher's NONE_HASH.
func (p *Publisher) Stored(tokens []int64, loraName string) (events.Event, error) {
	var extra [][]any
	n := len(tokens) / p.cfg.BlockSize
	if loraName != "" {
		extra = make([][]any, n)
		for i := range extra {
			extra[i] = []any{loraName}
		}
	}
	ds, err := blockhash.Chain(p.none, tokens, p.cfg.BlockSize, extra)
	if err != nil {
		return events.Event{}, err
	}
	ev := events.Event{Type: events.TypeBlockStored, TokenIDs: tokens[:n*p.cfg.BlockSize], BlockSize: int64(p.cfg.BlockSize),
		Medium: []byte("GPU"), GroupIdx: 0, HasGroupIdx: true, SpecKind: []byte("full_attention")}
	if loraName != "" {
		ev.LoRAName, ev.HasLoRAName = []byte(loraName), true
	}
	for _, d := range ds {
		h := events.Hash{Form: events.HashInt, Value: d.Wire()}
		if p.cfg.BinHashes {
			dd := d
			h = events.Hash{Form: events.HashBin, Value: d.Wire(), Bin: dd[:]}
		}
		ev.BlockHashes = append(ev.BlockHashes, h)
	}
	return ev, nil
}

// Publish sends one batch with the next sequence number. Like vLLM's, the send never blocks:
// beyond the high-water mark the message is silently dropped, and only the sequence reveals it.
func (p *Publisher) Publish(evs ...events.Event) error { return p.pubSend(true, evs) }

// PublishLost numbers and buffers a batch for replay but does not send it, as if the
// high-water mark had dropped it.
func (p *Publisher) PublishLost(evs ...events.Event) error { return p.pubSend(false, evs) }

func (p *Publisher) pubSend(send bool, evs []events.Event) error {
	b := events.Batch{TS: float64(time.Now().UnixNano()) / 1e9, DPRank: int64(p.cfg.DPRank), HasDPRank: true, Events: evs}
	payload := events.AppendBatch(nil, &b, p.wire)
	p.mu.Lock()
	seq := p.seq
	p.seq++
	if p.router != nil {
		if len(p.buf) == p.cfg.ReplayBuffer {
			p.buf = append(p.buf[:0], p.buf[1:]...)
		}
		p.buf = append(p.buf, pubBuffered{seq: seq, payload: payload})
	}
	p.mu.Unlock()
	if !send {
		return nil
	}
	return p.pub.Send(zmq4.NewMsgFrom([]byte(p.cfg.Topic), binary.BigEndian.AppendUint64(nil, seq), payload))
}

// SkipSeq advances the sequence without sending, to emulate loss in the network.
func (p *Publisher) SkipSeq(n uint64) {
	p.mu.Lock()
	p.seq += n
	p.mu.Unlock()
}

// pubServeReplay answers replay requests like vLLM's ROUTER: every buffered batch from the
// asked sequence on, then the end marker. Versions up to 0.25.1 reply [seq, payload], later
// ones [topic, seq, payload] (SPEC §1.8).
func (p *Publisher) pubServeReplay() {
	var minor, patch int
	_, _ = fmt.Sscanf(p.cfg.Version, "0.%d.%d", &minor, &patch) // validated by NewPublisher
	withTopic := minor*100+patch > 2501
	for {
		m, err := p.router.Recv()
		if err != nil {
			return
		}
		if len(m.Frames) < 2 {
			continue
		}
		id, req := m.Frames[0], m.Frames[len(m.Frames)-1]
		if len(req) != 8 {
			continue
		}
		start := binary.BigEndian.Uint64(req)
		p.mu.Lock()
		var out []pubBuffered
		for _, b := range p.buf {
			if b.seq >= start {
				out = append(out, b)
			}
		}
		p.mu.Unlock()
		for _, b := range out {
			frames := [][]byte{id, {}}
			if withTopic {
				frames = append(frames, []byte(p.cfg.Topic))
			}
			frames = append(frames, binary.BigEndian.AppendUint64(nil, b.seq), b.payload)
			if err := p.router.Send(zmq4.NewMsgFrom(frames...)); err != nil {
				break // the client went away; keep serving the others
			}
		}
		end := binary.BigEndian.AppendUint64(nil, ^uint64(0))
		_ = p.router.Send(zmq4.NewMsgFrom(id, []byte{}, end, []byte{}))
	}
}

// NewRankedPublishers starts one publisher per data-parallel rank, as vLLM does with
// data_parallel_size > 1: rank r binds the base port + r and reports rank r in its batches,
// and with cfg.Replay its replay socket binds the replay base port + r. cfg.Endpoint must be
// tcp://HOST:PORT; port 0 picks a free run of consecutive ports. The replay base is the port
// after the last event port (cfg.ReplayEndpoint is ignored).
func NewRankedPublishers(ctx context.Context, cfg PublisherConfig, ranks int) ([]*Publisher, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = "tcp://127.0.0.1:0"
	}
	host, port, err := net.SplitHostPort(strings.TrimPrefix(cfg.Endpoint, "tcp://"))
	if err != nil || !strings.HasPrefix(cfg.Endpoint, "tcp://") {
		return nil, fmt.Errorf("ranked publishers need a tcp://HOST:PORT endpoint, got %q", cfg.Endpoint)
	}
	base, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: bad port", cfg.Endpoint)
	}
	var lastErr error
	for range 20 { // with port 0, another process may take one of the following ports
		start := base
		if base == 0 {
			l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
			if err != nil {
				return nil, fmt.Errorf("find a free port: %w", err)
			}
			start = l.Addr().(*net.TCPAddr).Port
			_ = l.Close()
		}
		var pubs []*Publisher
		for r := range ranks {
			c := cfg
			c.DPRank = r
			c.Endpoint = "tcp://" + net.JoinHostPort(host, strconv.Itoa(start+r))
			c.ReplayEndpoint = "tcp://" + net.JoinHostPort(host, strconv.Itoa(start+ranks+r))
			p, err := NewPublisher(ctx, c)
			if err != nil {
				lastErr = err
				break
			}
			pubs = append(pubs, p)
		}
		if len(pubs) == ranks {
			return pubs, nil
		}
		for _, p := range pubs {
			_ = p.Close()
		}
		if base != 0 {
			break
		}
	}
	return nil, fmt.Errorf("start %d ranked publishers: %w", ranks, lastErr)
}

// Serve stores a prompt that starts at token 0 in cache as the engine behind p does when it
// serves the prompt, and returns the events the engine publishes for it: a BlockStored for the
// full blocks the cache did not hold, chained to the last one it held, then a BlockRemoved for
// each block evicted to make room (int hashes, as vLLM sends by default). Blocks it held count
// as just used. It returns no events when the cache held every block, and stores no more than
// the cache can hold.
func (p *Publisher) Serve(c *Cache, tokens []int64) ([]events.Event, error) {
	ev, err := p.Stored(tokens, "")
	if err != nil {
		return nil, err
	}
	k := 0
	for k < len(ev.BlockHashes) && c.Cached(ev.BlockHashes[k].Value) {
		k++
	}
	var removed []events.Event
	onEvict := c.OnEvict
	c.OnEvict = func(h uint64) {
		removed = append(removed, events.Event{Type: events.TypeBlockRemoved, BlockHashes: []events.Hash{{Form: events.HashInt, Value: h}}, Medium: []byte("GPU")})
		if onEvict != nil {
			onEvict(h)
		}
	}
	defer func() { c.OnEvict = onEvict }()
	// Pinned together, as one request's blocks are, then released.
	n := 0
	for n < len(ev.BlockHashes) && c.Pin(ev.BlockHashes[n].Value) {
		n++
	}
	for _, h := range ev.BlockHashes[:n] {
		c.Unpin(h.Value)
	}
	if n <= k {
		return removed, nil
	}
	if k > 0 {
		ev.Parent, ev.HasParent = ev.BlockHashes[k-1], true
	}
	ev.BlockHashes = ev.BlockHashes[k:n]
	ev.TokenIDs = ev.TokenIDs[k*int(ev.BlockSize) : n*int(ev.BlockSize)]
	return append([]events.Event{ev}, removed...), nil
}
