package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MooncakeBlockSize is the number of tokens per hash_id in the Mooncake FAST'25 traces.
const MooncakeBlockSize = 512

// maxTokens bounds a request's prompt and output lengths: a thousand times the longest context
// of any model, and small enough that sums over a trace cannot overflow.
const maxTokens = 1 << 30

// maxUnknownFields bounds the distinct unknown fields counted apart.
const maxUnknownFields = 64

// maxLine bounds one JSONL line, so a file without newlines cannot take all memory.
const maxLine = 64 << 20

// mooncakeRow is one JSONL line. Unknown fields are ignored: newer traces add some.
type mooncakeRow struct {
	Timestamp    *float64        `json:"timestamp"`
	InputLength  *int            `json:"input_length"`
	OutputLength int             `json:"output_length"`
	HashIDs      hashIDs         `json:"hash_ids"`
	SessionID    json.RawMessage `json:"session_id"`
	ChatID       json.RawMessage `json:"chat_id"`
}

// ReadMooncake reads a Mooncake trace: JSON lines with timestamp (ms), input_length,
// output_length, hash_ids (one per block of blockSize tokens, block 0 first) and, when present,
// a session_id or chat_id. name is used in errors and notes. The trace is held in memory: a
// file of more than MaxRequests requests or MaxBlockRefs block references is an error.
func ReadMooncake(r io.Reader, name string, blockSize int) (*Trace, error) {
	return readMooncake(r, name, blockSize, Limits{})
}

func readMooncake(r io.Reader, name string, blockSize int, lim Limits) (*Trace, error) {
	lim = lim.orDefault()
	if blockSize <= 0 {
		return nil, fmt.Errorf("mooncake trace %s: block size %d must be positive", name, blockSize)
	}
	t := &Trace{Name: name, Format: "mooncake", BlockSize: blockSize, PrefixInfo: true, maxRequests: lim.Requests}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var (
		line         int
		inconsistent int
		firstBad     int
		keys         keyStore
		scratch      []uint64 // the fast path's ids of the current line
		unknown      = map[string]int{}
		unknownOrder []string
		otherUnknown int
	)
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var (
			row mooncakeRow
			ids []uint64
			ok  bool
		)
		if !mooncakeSlowOnly {
			row, ids, ok = parseMooncakeFast(b, scratch[:0])
		}
		if ok {
			scratch = ids
		} else {
			var extra []string
			var err error
			row, extra, err = decodeMooncakeRow(b)
			if err != nil {
				return nil, fmt.Errorf("mooncake trace %s line %d: %w (want one JSON object per line)", name, line, err)
			}
			for _, k := range extra {
				if unknown[k] == 0 {
					if len(unknownOrder) >= maxUnknownFields {
						// A file of ever-new keys would grow the count map without
						// bound: past the bound they are only counted together.
						otherUnknown++
						continue
					}
					unknownOrder = append(unknownOrder, k)
				}
				unknown[k]++
			}
		}
		if row.Timestamp == nil {
			return nil, fmt.Errorf("mooncake trace %s line %d: no timestamp field", name, line)
		}
		if row.InputLength == nil {
			return nil, fmt.Errorf("mooncake trace %s line %d: no input_length field", name, line)
		}
		if row.HashIDs == nil {
			return nil, fmt.Errorf("mooncake trace %s line %d: no hash_ids field: a trace with lengths only is the Azure CSV format (--format azure)", name, line)
		}
		if *row.InputLength < 0 || row.OutputLength < 0 {
			return nil, fmt.Errorf("mooncake trace %s line %d: negative length (input %d, output %d)", name, line, *row.InputLength, row.OutputLength)
		}
		if *row.InputLength > maxTokens || row.OutputLength > maxTokens {
			return nil, fmt.Errorf("mooncake trace %s line %d: length out of range (input %d, output %d): want at most %d tokens", name, line, *row.InputLength, row.OutputLength, maxTokens)
		}
		if ts := *row.Timestamp; ts < 0 || ts != ts || ts > 1e15 {
			return nil, fmt.Errorf("mooncake trace %s line %d: timestamp %v is not a time in milliseconds", name, line, ts)
		}
		if want := (*row.InputLength + blockSize - 1) / blockSize; want != len(row.HashIDs) {
			inconsistent++
			if firstBad == 0 {
				firstBad = line
			}
		}
		if len(t.Requests) >= lim.Requests {
			return nil, requestsLimitError(fmt.Sprintf("mooncake trace %s line %d", name, line), lim.Requests, "simulate a part of the trace (head -n N)")
		}
		if keys.n+len(row.HashIDs) > lim.BlockRefs {
			return nil, refsLimitError(fmt.Sprintf("mooncake trace %s line %d", name, line), lim.BlockRefs, "simulate a part of the trace (head -n N)")
		}
		t.Requests = append(t.Requests, Request{
			Arrival:      *row.Timestamp / 1000,
			Blocks:       keys.add(row.HashIDs),
			Session:      sessionString(row.SessionID, row.ChatID),
			InputTokens:  *row.InputLength,
			OutputTokens: row.OutputLength,
			N:            1,
		})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("mooncake trace %s line %d: line longer than %d bytes", name, line+1, maxLine)
		}
		return nil, fmt.Errorf("read mooncake trace %s: %w", name, err)
	}
	if len(t.Requests) == 0 {
		return nil, fmt.Errorf("mooncake trace %s: no requests", name)
	}
	if inconsistent > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d requests (first on line %d) have a hash_ids count that does not match input_length at %d tokens per block; only blocks covered by input_length are cached", inconsistent, firstBad, blockSize))
	}
	if otherUnknown > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d more occurrences of fields past the first %d unknown ones are not used by the simulator", otherUnknown, maxUnknownFields))
	}
	for _, k := range unknownOrder {
		t.Notes = append(t.Notes, fmt.Sprintf("field %s (on %d rows) is not used by the simulator", clip(k), unknown[k]))
	}
	if t.sortByArrival() {
		t.Notes = append(t.Notes, "timestamps were not in order; requests were sorted by timestamp")
	}
	// Arrivals count from the first request (the published traces start at 0, exports with
	// epoch milliseconds do not), so that --add-replica-at is a time into the trace.
	first := t.Requests[0].Arrival
	for i := range t.Requests {
		t.Requests[i].Arrival -= first
	}
	return t, nil
}

// mooncakeSlowOnly makes every line go through encoding/json: the benchmark's reference.
var mooncakeSlowOnly = false

// hashIDs are a row's block ids. Published traces number blocks from 0, but a trace made from
// vLLM's events carries its unsigned 64-bit hashes, half of them above the int64 range, and
// older tools wrote signed ones: both are read, a negative id as its two's complement.
type hashIDs []uint64

// UnmarshalJSON reads an array of integers. encoding/json has checked the syntax already, so
// splitting at commas only has to reject elements that are not integers.
func (h *hashIDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errors.New("hash_ids: want an array of integers")
	}
	inner := bytes.TrimSpace(b[1 : len(b)-1])
	out := make(hashIDs, 0, bytes.Count(inner, []byte{','})+1)
	for len(inner) > 0 {
		elem := inner
		if i := bytes.IndexByte(inner, ','); i >= 0 {
			elem, inner = inner[:i], inner[i+1:]
		} else {
			inner = nil
		}
		v, ok := parseHashID(bytes.TrimSpace(elem))
		if !ok {
			return fmt.Errorf("hash_ids: %.40q is not an integer of at most 64 bits", bytes.TrimSpace(elem))
		}
		out = append(out, v)
	}
	*h = out
	return nil
}

// parseHashID parses a decimal integer in the int64 or uint64 range.
func parseHashID(b []byte) (uint64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -v, true
	}
	return v, true
}

// decodeMooncakeRow decodes one line and names the fields it does not know. Rows without
// unknown fields, the common case, are decoded once.
func decodeMooncakeRow(b []byte) (mooncakeRow, []string, error) {
	var row mooncakeRow
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	err := d.Decode(&row)
	if err == nil {
		if d.More() {
			return row, nil, errors.New("more than one JSON value on the line")
		}
		return row, nil, nil
	}
	if !strings.Contains(err.Error(), "unknown field") {
		return row, nil, err
	}
	row = mooncakeRow{}
	if err := json.Unmarshal(b, &row); err != nil {
		return row, nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return row, nil, err
	}
	var extra []string
	for k := range fields {
		switch k {
		case "timestamp", "input_length", "output_length", "hash_ids", "session_id", "chat_id":
		default:
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return row, extra, nil
}

// sessionString renders a session id that may be a JSON string or number.
func sessionString(vs ...json.RawMessage) string {
	for _, v := range vs {
		if len(v) == 0 || string(v) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		var n json.Number
		if json.Unmarshal(v, &n) == nil {
			return n.String()
		}
		return strconv.Quote(string(v))
	}
	return ""
}
