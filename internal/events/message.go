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
