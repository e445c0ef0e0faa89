package events_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/fleet"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// tapUntil runs a tap over sources while drive publishes; drive returns once it has seen what
// it needs through the seen channel, then the tap stops and its report is returned.
func tapUntil(t *testing.T, ctx context.Context, sources []events.Source, drive func(seen <-chan *events.Message)) *events.Report {
	t.Helper()
	c := events.NewCollector(events.Options{})
	tctx, stop := context.WithCancel(ctx)
	seen := make(chan *events.Message, 4096)
	done := make(chan error, 1)
	go func() {
		done <- events.Tap(tctx, events.Config{Sources: sources, Observe: func(m *events.Message) {
			mm := *m
			select {
			case seen <- &mm:
			default:
			}
		}}, c)
	}()
	drive(seen)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return c.Report(time.Second)
}

// publishUntilSeen publishes ev until the tap reports a message from pub's endpoint.
func publishUntilSeen(t *testing.T, ctx context.Context, pub *fleet.Publisher, seen <-chan *events.Message, ev events.Event) {
	t.Helper()
	for {
		if err := pub.Publish(ev); err != nil {
			t.Fatal(err)
		}
		select {
		case <-seen:
			return
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the tap never received from " + pub.Endpoint())
		}
	}
}

func TestTapListen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ep := "tcp://" + freePort(t)
	pub, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{Endpoint: ep, Connect: true, Version: "0.20.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	ev, _ := pub.Stored(make([]int64, 32), "")
	r := tapUntil(t, ctx, []events.Source{{Endpoint: ep, Listen: true}}, func(seen <-chan *events.Message) {
		publishUntilSeen(t, ctx, pub, seen, ev)
	})
	if len(r.Publishers) != 1 || r.Publishers[0].Batches == 0 || r.Publishers[0].WireEra != "array" {
		t.Errorf("publishers %+v, want one array-era publisher with batches", r.Publishers)
	}
}

// TestTapRestartAndDeadPeer: a dead endpoint does not stall a live one, and a publisher that
// restarts on the same port is picked up again, its restart counted.
func TestTapRestartAndDeadPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dead := "tcp://" + freePort(t)
	ep := "tcp://" + freePort(t)
	start := func() *fleet.Publisher {
		p, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{Endpoint: ep})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := tapUntil(t, ctx, []events.Source{{Endpoint: dead}, {Endpoint: ep}}, func(seen <-chan *events.Message) {
		p1 := start()
		ev, _ := p1.Stored(make([]int64, 16), "")
		publishUntilSeen(t, ctx, p1, seen, ev)
		// Enough batches that the new process, publishing every 20 ms until the tap has
		// reconnected, would need longer than the test's deadline to climb past the old
		// sequence: a slow reconnect fails the test by its deadline, never by a miscount.
		for range 2000 {
			_ = p1.Publish(ev)
		}
		for n := 0; n < 2000; n++ {
			select {
			case <-seen:
			case <-ctx.Done():
				t.Fatal("batches after the first never arrived")
			}
		}
		_ = p1.Close()
		p2 := start()
		defer func() { _ = p2.Close() }()
		publishUntilSeen(t, ctx, p2, seen, ev)
	})
	var live, silent *events.Publisher
	for i := range r.Publishers {
		if r.Publishers[i].Endpoint == ep {
			live = &r.Publishers[i]
		} else {
			silent = &r.Publishers[i]
		}
	}
	if live == nil || silent == nil {
		t.Fatalf("publishers %+v, want the live and the dead endpoint", r.Publishers)
	}
	if live.Restarts != 1 || silent.Messages != 0 {
		t.Errorf("live restarts %d, dead messages %d; want 1 and 0", live.Restarts, silent.Messages)
	}
	if live.Connected == nil || !*live.Connected || live.Reconnects < 1 || silent.Connected == nil || *silent.Connected || silent.ConnectError == "" {
		t.Errorf("live connected %v reconnects %d; dead connected %v error %q; want true, at least 1; false and an error",
			live.Connected, live.Reconnects, silent.Connected, silent.ConnectError)
	}
}

// TestTapTopicFilter: two publishers dial one listening tap; --topic keeps only one of them,
// and the publishers are told apart by topic.
func TestTapTopicFilter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ep := "tcp://" + freePort(t)
	var pubs []*fleet.Publisher
	for _, topic := range []string{"kv@a@m", "kv@b@m"} {
		p, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{Endpoint: ep, Connect: true, Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close() }()
		pubs = append(pubs, p)
	}
	ev, _ := pubs[0].Stored(make([]int64, 16), "")
	c := events.NewCollector(events.Options{})
	tctx, stop := context.WithCancel(ctx)
	seen := make(chan string, 1024)
	done := make(chan error, 1)
	go func() {
		done <- events.Tap(tctx, events.Config{Sources: []events.Source{{Endpoint: ep, Listen: true}}, Topic: "kv@a",
			Observe: func(m *events.Message) {
				select {
				case seen <- string(m.Topic):
				default:
				}
			}}, c)
	}()
	// Both publish until a has been seen five times; b is filtered by the subscription.
	for n := 0; n < 5; {
		for _, p := range pubs {
			_ = p.Publish(ev)
		}
		select {
		case topic := <-seen:
			if topic != "kv@a@m" {
				t.Fatalf("received topic %q through a kv@a subscription", topic)
			}
			n++
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("nothing received")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r := c.Report(time.Second)
	if len(r.Publishers) != 1 || r.Publishers[0].Topic != "kv@a@m" {
		t.Errorf("publishers %+v, want only kv@a@m", r.Publishers)
	}
}

// failingWriter fails every write, as a full disk would.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestTapRecordingFails: a recording that cannot be written stops the tap with the error
// instead of hanging or losing it.
func TestTapRecordingFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	rec, err := events.NewRecorder(failingWriter{}) // buffered: fails at the first flush
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := pub.Stored(make([]int64, 16), "")
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				_ = pub.Publish(ev)
			}
		}
	}()
	defer close(stop)
	err = events.Tap(ctx, events.Config{Sources: []events.Source{{Endpoint: pub.Endpoint()}}, Recorder: rec}, events.NewCollector(events.Options{}))
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("Tap = %v, want the write error", err)
	}
	if ctx.Err() != nil {
		t.Error("Tap ran until the test deadline instead of stopping at the write error")
	}
}

// TestTapMaxMessage: through real zmq4 sockets, a message over --max-message drops the
// connection before zmq4 allocates the frame that crosses the bound; the tap reconnects, keeps
// receiving, and reports the oversize message instead of losing it silently.
func TestTapMaxMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	small, _ := pub.Stored(make([]int64, 16), "")
	big, _ := pub.Stored(make([]int64, 1<<16), "") // 64 Ki tokens: over 64 KiB
	const maxMessage = 64 << 10
	c := events.NewCollector(events.Options{MaxMessage: maxMessage})
	tctx, stop := context.WithCancel(ctx)
	seen := make(chan *events.Message, 4096)
	done := make(chan error, 1)
	go func() {
		done <- events.Tap(tctx, events.Config{Sources: []events.Source{{Endpoint: pub.Endpoint()}}, MaxMessage: maxMessage,
			Observe: func(m *events.Message) {
				select {
				case seen <- &events.Message{Seq: m.Seq}:
				default:
				}
			}}, c)
	}()
	publishUntilSeen(t, ctx, pub, seen, small)
	if err := pub.Publish(big); err != nil {
		t.Fatal(err)
	}
	bigSeq := pub.Sent() - 1
	// Small batches after the big one arrive only over a new connection, once the tap has
	// dropped the old one at the big message.
	for after := false; !after; {
		if err := pub.Publish(small); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-seen:
			seq := m.Seq
			if seq == bigSeq {
				t.Fatal("the oversize batch was received")
			}
			after = seq > bigSeq
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("nothing arrived after the oversize batch")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r := c.Report(time.Second)
	p := r.Publishers[0]
	if p.OversizeMessages < 1 || p.LargestMessage <= maxMessage || p.Reconnects < 1 {
		t.Errorf("oversize messages %d, largest %d, reconnects %d; want at least 1, over %d, at least 1", p.OversizeMessages, p.LargestMessage, p.Reconnects, maxMessage)
	}
	found := false
	for _, f := range r.Findings {
		found = found || f.Code == "message-too-large"
	}
	if !found {
		t.Errorf("findings %+v, want message-too-large", r.Findings)
	}
}

// TestTapListenPeerLeaves: when one of the publishers dialling a listening tap goes away, the
// others keep their connections: no reconnect, no batches lost.
func TestTapListenPeerLeaves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep := "tcp://" + freePort(t)
	var pubs []*fleet.Publisher
	for _, topic := range []string{"kv@a@m", "kv@b@m"} {
		p, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{Endpoint: ep, Connect: true, Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close() }()
		pubs = append(pubs, p)
	}
	ev, _ := pubs[0].Stored(make([]int64, 16), "")
	r := tapUntil(t, ctx, []events.Source{{Endpoint: ep, Listen: true}}, func(seen <-chan *events.Message) {
		// Both publish until each has been seen.
		for got := map[string]bool{}; len(got) < 2; {
			for _, p := range pubs {
				_ = p.Publish(ev)
			}
			select {
			case m := <-seen:
				got[string(m.Topic)] = true
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("not both publishers were received")
			}
		}
		_ = pubs[0].Close()
		for range 200 {
			if err := pubs[1].Publish(ev); err != nil {
				t.Fatal(err)
			}
		}
		last := pubs[1].Sent() - 1
		for {
			select {
			case m := <-seen:
				if string(m.Topic) == "kv@b@m" && m.Seq == last {
					return
				}
			case <-ctx.Done():
				t.Fatal("the remaining publisher's last batch never arrived")
			}
		}
	})
	for _, p := range r.Publishers {
		if p.Topic == "kv@b@m" && (p.LostBatches != 0 || p.Reconnects != 0) {
			t.Errorf("remaining publisher: lost %d, reconnects %d; want 0 and 0", p.LostBatches, p.Reconnects)
		}
	}
	for _, f := range r.Findings {
		if f.Code == "listen-shared-topic" {
			t.Errorf("finding %+v for publishers with distinct topics", f)
		}
	}
}

// TestTapListenSharedTopic: two publishers with the same (vLLM's default, empty) topic dial one
// listening tap. Their sequences interleave under one topic, so the tap must say that its
// loss and restart counts for that topic are meaningless.
func TestTapListenSharedTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep := "tcp://" + freePort(t)
	var pubs []*fleet.Publisher
	for range 2 {
		p, err := fleet.NewPublisher(ctx, fleet.PublisherConfig{Endpoint: ep, Connect: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close() }()
		pubs = append(pubs, p)
	}
	pubs[1].SkipSeq(1 << 20) // tells the two apart in the test, not in the tap
	ev, _ := pubs[0].Stored(make([]int64, 16), "")
	r := tapUntil(t, ctx, []events.Source{{Endpoint: ep, Listen: true}}, func(seen <-chan *events.Message) {
		for got := map[bool]bool{}; len(got) < 2; {
			for _, p := range pubs {
				_ = p.Publish(ev)
			}
			select {
			case m := <-seen:
				got[m.Seq >= 1<<20] = true
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("not both publishers were received")
			}
		}
	})
	var codes []string
	for _, f := range r.Findings {
		codes = append(codes, f.Code)
	}
	if !slices.Contains(codes, "listen-shared-topic") || r.Publishers[0].ListenPeers != 2 {
		t.Errorf("listen peers %d, findings %v; want 2 and listen-shared-topic", r.Publishers[0].ListenPeers, codes)
	}
}

// TestTapHostilePeer: a peer that completes the ZMTP greeting and then announces a 1 TiB
// handshake command makes zmq4 allocate that much unless the transport refuses it first. The
// tap must survive (the test process would die of it), retry, and name the cause.
func TestTapHostilePeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	retried := make(chan struct{})
	go func() {
		greeting := append([]byte{0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 3, 0}, "NULL"...)
		greeting = append(greeting, make([]byte, 64-len(greeting))...)
		for n := 1; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(greeting)
			_, _ = c.Write(binary.BigEndian.AppendUint64([]byte{0x06}, 1<<40)) // COMMAND|LONG
			if n == 2 {
				close(retried) // the first attempt is over: the tap dialled again
			}
			defer func() { _ = c.Close() }()
		}
	}()
	ep := "tcp://" + l.Addr().String()
	r := tapUntil(t, ctx, []events.Source{{Endpoint: ep}}, func(<-chan *events.Message) {
		select {
		case <-retried:
		case <-ctx.Done():
			t.Fatal("the tap did not dial again after the hostile handshake")
		}
	})
	p := r.Publishers[0]
	if p.Connected == nil || *p.Connected || !strings.Contains(p.ConnectError, "over the 67108864-byte bound") {
		t.Errorf("connected %v, error %q; want not connected, naming the --max-message bound", p.Connected, p.ConnectError)
	}
}

// TestTapHundredFrameMessage: a publisher sends a message of 100 frames between good batches.
// The tap counts it as malformed with its real frame count, and the recording it writes reads
// back whole: the hostile message costs itself, not the capture.
func TestTapHundredFrameMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep := "tcp://" + freePort(t)
	pub := zmq4.NewPub(ctx)
	defer func() { _ = pub.Close() }()
	if err := pub.Listen(ep); err != nil {
		t.Fatal(err)
	}
	good := func(seq uint64) zmq4.Msg {
		return zmq4.NewMsgFrom([]byte("kv"), binary.BigEndian.AppendUint64(nil, seq), []byte{0x93, 0xcb, 0x41, 0xd9, 0, 0, 0, 0, 0, 0, 0x90, 0xc0})
	}
	hostile := make([][]byte, 100)
	for i := range hostile {
		hostile[i] = []byte{byte(i)}
	}
	var rec bytes.Buffer
	recorder, err := events.NewRecorder(&rec)
	if err != nil {
		t.Fatal(err)
	}
	c := events.NewCollector(events.Options{})
	tctx, stop := context.WithCancel(ctx)
	seen := make(chan int, 4096)
	done := make(chan error, 1)
	go func() {
		done <- events.Tap(tctx, events.Config{Sources: []events.Source{{Endpoint: ep}}, Recorder: recorder,
			Observe: func(m *events.Message) {
				select {
				case seen <- m.Frames:
				default:
				}
			}}, c)
	}()
	// Publish until the subscription has reached the publisher, then the hostile message and
	// one more good batch.
	for first := false; !first; {
		if err := pub.Send(good(1)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-seen:
			first = true
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("nothing received")
		}
	}
	if err := pub.Send(zmq4.NewMsgFrom(hostile...)); err != nil {
		t.Fatal(err)
	}
	if err := pub.Send(good(2)); err != nil {
		t.Fatal(err)
	}
	// Wait for the hostile message and the good batch after it: stopping at the hostile one
	// would race the last batch's arrival (the recording then holds one record fewer).
	for frames := []int{}; ; {
		if i := slices.Index(frames, 100); i >= 0 && i < len(frames)-1 {
			break
		}
		select {
		case n := <-seen:
			frames = append(frames, n)
		case <-ctx.Done():
			t.Fatalf("the hostile message and the batch after it were not both accounted (got messages of %v frames)", frames)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The hostile message's first frame is its topic: it is accounted under that topic.
	var malformed uint64
	var samples []events.MalformedSample
	for _, p := range c.Report(time.Second).Publishers {
		malformed += p.Malformed
		samples = append(samples, p.MalformedSamples...)
	}
	if malformed != 1 || len(samples) != 1 || !strings.Contains(samples[0].Reason, "100 frames") {
		t.Errorf("malformed %d %+v, want 1 naming 100 frames", malformed, samples)
	}
	rd, err := events.NewReader(&rec)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		var r events.Record
		if err := rd.Next(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the recording does not read back: %v", err)
		}
		n++
	}
	if n < 3 || rd.Skipped != 0 || rd.Truncated {
		t.Errorf("read %d records, skipped %d, truncated %v; want every message, none skipped", n, rd.Skipped, rd.Truncated)
	}
}
