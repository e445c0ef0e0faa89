package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// LiteLLM's spend-log rows (LiteLLM_SpendLogs, read from the database by internal/litellmdb or
// exported with row_to_json), as the proxy writes them (BerriAI/litellm@00907c60692d7d14dc7ea814e645165d3b4d5fe9:
// litellm/proxy/spend_tracking/spend_tracking_utils.py): the request as the client sent it is
// the JSON of proxy_server_request (metadata.proxy_server_request before that column existed,
// the messages column in older versions still), and all of them are "{}" unless the proxy runs
// with store_prompts_in_spend_logs. Strings longer than MAX_STRING_LENGTH_PROMPT_IN_DB (2048
// characters by default) are stored cut, their first 35% and last 65% around a marker;
// turn_off_message_logging stores the messages as "redacted-by-litellm".

// liteLLMTruncated and liteLLMRedacted are what LiteLLM writes in place of what it did not
// store (LITELLM_TRUNCATED_PAYLOAD_FIELD and REDACTED_BY_LITELM_STRING in litellm/constants.py).
const (
	liteLLMTruncated = "litellm_truncated skipped "
	liteLLMRedacted  = "redacted-by-litellm"
)

// storePrompts is what to turn on for LiteLLM to store the requests.
const storePrompts = "LiteLLM stores the request only with general_settings.store_prompts_in_spend_logs: true in the proxy's config.yaml (or STORE_PROMPTS_IN_SPEND_LOGS=true); rows written before that stay empty"

// generationCalls are LiteLLM's call types whose request reaches the engine as a chat or a
// completion.
var generationCalls = map[string]bool{
	"completion": true, "acompletion": true, "text_completion": true, "atext_completion": true,
	"anthropic_messages": true, "": true,
}

type liteLLM struct {
	vs                                     *valueStream
	rows, used, empty, redacted, truncated int64
	failures, otherCalls, tooLong          int64
	fromColumn, fromMetadata, fromMessages int64
	withOutput, withSession                int64
	otherCall                              string
}

func newLiteLLM(vs *valueStream) *liteLLM { return &liteLLM{vs: vs} }

type liteLLMRow struct {
	RequestID        string          `json:"request_id"`
	CallType         string          `json:"call_type"`
	StartTime        json.RawMessage `json:"startTime"`
	Model            string          `json:"model"`
	SessionID        string          `json:"session_id"`
	Status           string          `json:"status"`
	CompletionTokens *int64          `json:"completion_tokens"`
	Messages         json.RawMessage `json:"messages"`
	Request          json.RawMessage `json:"proxy_server_request"`
	Metadata         json.RawMessage `json:"metadata"`
	RowBytes         *int64          `json:"kvcheck_row_bytes"`
}

func (c *liteLLM) next() ([]byte, error) {
	for {
		v, err := c.vs.next()
		var tl *tooLongError
		if errors.As(err, &tl) {
			c.rows++
			c.tooLong++
			return skipLine(tl.Error()), nil
		}
		if errors.Is(err, io.EOF) && c.used == 0 && c.empty > 0 {
			return nil, fmt.Errorf("%d rows, none with the request stored: %s", c.empty, storePrompts)
		}
		if err != nil {
			return nil, err
		}
		c.rows++
		var row liteLLMRow
		if err := json.Unmarshal(v, &row); err != nil {
			return skipLine(fmt.Sprintf("row %d: not a spend-log row: %v", c.rows, err)), nil
		}
		where := "request " + row.RequestID
		if row.RowBytes != nil {
			c.tooLong++
			return skipLine(fmt.Sprintf("%s: a row of %d bytes, longer than the limit: raise --max-line", where, *row.RowBytes)), nil
		}
		if !generationCalls[row.CallType] {
			// Embeddings, images, files...: nothing the engine prefills for a chat.
			c.otherCalls++
			if c.otherCall == "" {
				c.otherCall = row.CallType
			}
			continue
		}
		if row.Status == "failure" {
			c.failures++
			continue
		}
		body, from := c.body(row)
		if body == nil {
			c.empty++
			return skipLine(where + ": no request stored: " + storePrompts), nil
		}
		raw, _ := json.Marshal(body)
		if bytes.Contains(raw, []byte(liteLLMRedacted)) {
			c.redacted++
			return skipLine(where + ": the messages were stored as \"redacted-by-litellm\": turn turn_off_message_logging off (litellm_settings) for the proxy to keep them"), nil
		}
		if bytes.Contains(raw, []byte(liteLLMTruncated)) {
			c.truncated++
		}
		switch from {
		case "proxy_server_request":
			c.fromColumn++
		case "metadata":
			c.fromMetadata++
		default:
			c.fromMessages++
		}
		rec := record{Body: body, SessionID: row.SessionID, Where: where}
		if len(row.StartTime) > 0 && string(row.StartTime) != "null" {
			rec.Timestamp = row.StartTime
		}
		if row.CompletionTokens != nil && *row.CompletionTokens > 0 {
			rec.CompletionTokens = row.CompletionTokens
			c.withOutput++
		}
		if row.SessionID != "" {
			c.withSession++
		}
		c.used++
		return rec.line(), nil
	}
}

// body finds the request in a row: proxy_server_request, else metadata.proxy_server_request,
// else the messages column; nil when the row holds none.
func (c *liteLLM) body(row liteLLMRow) (map[string]any, string) {
	if b := requestObject(row.Request); b != nil {
		return b, "proxy_server_request"
	}
	if m, ok := asObject(row.Metadata); ok {
		if b := requestObject(m["proxy_server_request"]); b != nil {
			return b, "metadata"
		}
	}
	var msgs []json.RawMessage
	if json.Unmarshal(row.Messages, &msgs) == nil && len(msgs) > 0 {
		return map[string]any{"model": row.Model, "messages": json.RawMessage(row.Messages)}, "messages"
	}
	var prompt string
	if json.Unmarshal(row.Messages, &prompt) == nil && strings.TrimSpace(prompt) != "" && prompt != "{}" {
		return map[string]any{"model": row.Model, "prompt": prompt}, "messages"
	}
	return nil, ""
}

// requestObject decodes a stored request (an object, or a string holding one) when it has
// messages or a prompt.
func requestObject(raw json.RawMessage) map[string]any {
	m, ok := asObject(raw)
	if !ok {
		return nil
	}
	if _, ok := m["messages"]; !ok {
		if _, ok := m["prompt"]; !ok {
			return nil
		}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *liteLLM) report() SourceReport {
	var rep SourceReport
	if c.truncated > 0 {
		rep.Lossy = append(rep.Lossy, fmt.Sprintf("%d of %d requests were stored cut short by LiteLLM (a string longer than MAX_STRING_LENGTH_PROMPT_IN_DB, 2048 characters by default, keeps its first 35%% and last 65%%): reuse past the cut is not seen, so the shared prefill of those requests is a lower bound; raise MAX_STRING_LENGTH_PROMPT_IN_DB in the proxy's environment", c.truncated, c.used))
	}
	if c.empty > 0 && c.used > 0 {
		rep.Lossy = append(rep.Lossy, fmt.Sprintf("%d rows hold no request (%s)", c.empty, storePrompts))
	}
	if c.redacted > 0 {
		rep.Lossy = append(rep.Lossy, fmt.Sprintf("%d rows hold redacted messages (turn_off_message_logging)", c.redacted))
	}
	from := []string{}
	for _, f := range []struct {
		n    int64
		what string
	}{{c.fromColumn, "proxy_server_request"}, {c.fromMetadata, "metadata.proxy_server_request (a LiteLLM before that column)"}, {c.fromMessages, "the messages column (an older LiteLLM: no tools)"}} {
		if f.n > 0 {
			from = append(from, fmt.Sprintf("%d from %s", f.n, f.what))
		}
	}
	if len(from) > 0 {
		rep.Notes = append(rep.Notes, "requests as the client sent them: "+strings.Join(from, ", "))
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("arrivals from startTime; sessions from session_id (%d of %d rows; LiteLLM fills it from the client's litellm_session_id or x-litellm-session-id, else with a new id per request); output lengths from completion_tokens (%d rows)", c.withSession, c.used, c.withOutput))
	if c.otherCalls > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d rows of other calls (such as %s) left out: not chats or completions", c.otherCalls, c.otherCall))
	}
	if c.failures > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d failed calls (status failure) left out", c.failures))
	}
	return rep
}
