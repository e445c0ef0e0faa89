package events

import (
	"encoding/binary"
)

// Message is one received publisher message: the three frames [topic, seq, payload] and when
// they arrived. Recovered marks a batch fetched from a replay socket after a gap.
type Message struct {
	// Source names the publisher socket: the endpoint dialled, or the peer of a listener.
	Source    string
	Topic     []byte
	Seq       uint64
	Payload   []byte
	RecvNanos int64
	// Frames is the number of frames received; anything but 3 is malformed.
	Frames int
	// SeqLen is the length of the sequence frame; anything but 8 is malformed.
	SeqLen    int
	Recovered bool
	// OwnDropped lists the messages of the same source the tap dropped itself (its queue was
	// full) since the message before this one: the collector skips their sequence numbers
	// instead of counting them as the publisher's loss.
	OwnDropped []DropRun
}

// DropRun is a run of consecutive sequence numbers of one topic that the tap dropped itself.
type DropRun struct {
	Topic    string
	From, To uint64
}

// maxDropRuns bounds the runs carried by one message. Past it, further drops are still counted
// as own drops but their sequence numbers are not known, so they show as a gap too.
const maxDropRuns = 1024

// addDrop records that the message with frames was dropped by the tap.
func addDrop(runs []DropRun, frames [][]byte) []DropRun {
	if len(frames) != 3 || len(frames[1]) != 8 {
		return runs // malformed: no sequence number to skip
	}
	seq := binary.BigEndian.Uint64(frames[1])
	if n := len(runs); n > 0 && runs[n-1].To+1 == seq && runs[n-1].Topic == string(frames[0]) {
		runs[n-1].To = seq
		return runs
	}
	if len(runs) >= maxDropRuns {
		return runs
	}
	return append(runs, DropRun{Topic: string(frames[0]), From: seq, To: seq})
}

// FromFrames builds a Message from raw frames. It never fails: a wrong frame count or sequence
// length is kept in the message for the collector to count as malformed.
func FromFrames(source string, frames [][]byte, recvNanos int64) Message {
	m := Message{Source: source, Frames: len(frames), RecvNanos: recvNanos}
	if len(frames) > 0 {
		m.Topic = frames[0]
	}
	if len(frames) > 1 {
		m.SeqLen = len(frames[1])
		if len(frames[1]) == 8 {
			m.Seq = binary.BigEndian.Uint64(frames[1])
		}
	}
	if len(frames) > 2 {
		m.Payload = frames[2]
	}
	return m
}

// Bytes is the size of the message's frames on the wire, without ZMTP framing.
func (m *Message) Bytes() int { return len(m.Topic) + m.SeqLen + len(m.Payload) }
