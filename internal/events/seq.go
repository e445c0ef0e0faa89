package events

// seqWindow is how many recent sequence numbers a publisher's tracker remembers, to tell a
// duplicate (same number, same payload) from a restart (number goes back, new payload) and to
// credit late or replayed batches against earlier gaps.
const seqWindow = 4096

// maxJump is the largest forward jump of a sequence number taken for lost batches: 16M
// batches is days of a busy publisher's whole stream. A larger jump (to 2^64-1, say) is not a
// loss anyone could have had: a corrupt sequence frame or a publisher numbering anew, counted
// as a jump and never as lost batches.
const maxJump = 1 << 24

// maxOpenGaps bounds the remembered gap ranges; older ones can no longer be recovered.
const maxOpenGaps = 1024

// seqVerdict is what a sequence number means for the stream.
type seqVerdict uint8

const (
	seqNext      seqVerdict = iota // the expected next number, or the first ever seen
	seqGap                         // ahead of the expected number: batches were lost
	seqDuplicate                   // seen before with the same payload
	seqLate                        // fills an earlier gap (arrived late, or replayed)
	seqRestart                     // went back with new content: the publisher restarted
	seqJump                        // implausibly far ahead: numbering anew, or a corrupt frame
)

type seqSlot struct {
	seq   uint64
	hash  uint64
	valid bool
}

// Gap is a range of missing sequence numbers, From to To inclusive.
type Gap struct{ From, To uint64 }

// seqTracker accounts for one publisher's sequence numbers. The first number seen is taken as
// the start, since some emulators count from 1 and a tap may join late.
type seqTracker struct {
	// ordered says batches arrive in sequence order but for replays (one connection per
	// publisher): a lower number that is not a replay is then a restart, never a late batch.
	ordered  bool
	started  bool
	first    uint64
	expected uint64
	ring     [seqWindow]seqSlot
	gaps     []Gap

	batches, gapCount, lost, dups, late, restarts, jumps uint64
	// jumpFrom and jumpTo are the first implausible jump, for the finding. jumped says the
	// last batch jumped; afterJump is the number that continues from it.
	jumpFrom, jumpTo, afterJump uint64
	jumped                      bool
}

// observe classifies seq and updates the counters. For a gap it also returns the missing range.
// A recovered batch (fetched from a replay socket) is never a restart: one that fills no open
// gap, because the gap was forgotten or already filled, is skipped as a duplicate without
// being counted as one.
func (s *seqTracker) observe(seq, hash uint64, recovered bool) (seqVerdict, Gap) {
	slot := &s.ring[seq%seqWindow]
	if s.jumped {
		s.jumped = false
		if seq == s.afterJump {
			// The batch after a jump continues from it: the publisher numbers anew.
			s.ring = [seqWindow]seqSlot{}
			s.gaps = s.gaps[:0]
			s.expected = seq
		}
	}
	switch {
	case !s.started:
		s.started, s.first, s.expected = true, seq, seq+1
	case seq == s.expected:
		s.expected++
	case seq > s.expected && seq-s.expected > maxJump:
		// Whether the publisher numbers anew from here or this one sequence frame was
		// corrupt, the next batch tells: until then the numbering stays where it was.
		if s.jumps == 0 {
			s.jumpFrom, s.jumpTo = s.expected-1, seq
		}
		s.jumps++
		s.afterJump, s.jumped = seq+1, true
		s.batches++
		return seqJump, Gap{}
	case seq > s.expected:
		g := Gap{From: s.expected, To: seq - 1}
		s.gapCount++
		s.lost += g.To - g.From + 1
		s.addGap(g)
		s.expected = seq + 1
		s.remember(slot, seq, hash)
		s.batches++
		return seqGap, g
	default: // seq < expected
		if slot.valid && slot.seq == seq && !recovered {
			if slot.hash == hash {
				s.dups++
				return seqDuplicate, Gap{}
			}
			s.restart(seq)
		} else if (recovered || !s.ordered) && s.fill(seq) {
			s.late++
			s.remember(slot, seq, hash)
			s.batches++
			return seqLate, Gap{}
		} else if recovered {
			return seqDuplicate, Gap{}
		} else {
			s.restart(seq)
		}
		s.remember(&s.ring[seq%seqWindow], seq, hash)
		s.batches++
		return seqRestart, Gap{}
	}
	s.remember(slot, seq, hash)
	s.batches++
	return seqNext, Gap{}
}

// skip passes over from..to, batches the tap dropped itself: they are neither received nor
// lost. A gap before them is still the publisher's.
func (s *seqTracker) skip(from, to uint64) {
	switch {
	case !s.started:
		s.started, s.first, s.expected = true, from, to+1
		return
	case from > s.expected && from-s.expected <= maxJump:
		g := Gap{From: s.expected, To: from - 1}
		s.gapCount++
		s.lost += g.To - g.From + 1
		s.addGap(g)
	case from < s.expected && to >= s.expected:
	case from != s.expected:
		return // before what was seen, or an implausible jump: the next batch decides
	}
	s.expected = to + 1
}

func (s *seqTracker) remember(slot *seqSlot, seq, hash uint64) {
	*slot = seqSlot{seq: seq, hash: hash, valid: true}
}

func (s *seqTracker) restart(seq uint64) {
	s.restarts++
	s.ring = [seqWindow]seqSlot{}
	s.gaps = s.gaps[:0]
	s.expected = seq + 1
}

func (s *seqTracker) addGap(g Gap) {
	if len(s.gaps) == maxOpenGaps {
		copy(s.gaps, s.gaps[1:])
		s.gaps = s.gaps[:len(s.gaps)-1]
	}
	s.gaps = append(s.gaps, g)
}

// fill removes seq from the open gaps and reports whether it was missing.
func (s *seqTracker) fill(seq uint64) bool {
	for i, g := range s.gaps {
		if seq < g.From || seq > g.To {
			continue
		}
		switch {
		case g.From == g.To:
			s.gaps = append(s.gaps[:i], s.gaps[i+1:]...)
		case seq == g.From:
			s.gaps[i].From++
		case seq == g.To:
			s.gaps[i].To--
		default:
			s.gaps[i].To = seq - 1
			rest := Gap{From: seq + 1, To: g.To}
			s.gaps = append(s.gaps[:i+1], append([]Gap{rest}, s.gaps[i+1:]...)...)
		}
		return true
	}
	return false
}
