package sim

import (
	"fmt"
	"io"
	"strings"
)

// Router emulations are policies like any other to the simulator: sim.PolicyInfo values that
// internal/router builds for each product, with the product's settings bound in (as shipped,
// as a user's files configure them, as kvcheck would tune them), and hands to a run
// (Sweep.Emulations, SimulatePolicy). This package never names a product.
//
// Routers that read characters (production-stack prefixaware, SGLang cache_aware, Ray's prefix
// affinity) or request fields (headers, cache_control markers) need Request.View, which only
// sources holding the request bodies fill (request logs). On a trace of block hashes such an
// emulation cannot run: simulating it returns a *CannotRunError saying why, never a figure.

// View is what a router that reads the request itself, rather than the engine's blocks, sees of
// it. Sources that hold request bodies (request logs) fill it; traces and recordings leave
// Request.View nil.
type View struct {
	// Chat is true for a chat completion (messages), false for a completion (prompt).
	Chat bool
	// Text is a completion's prompt, or a chat's texts back to back, as Pieces describe them:
	// each message's string content or the texts of its content parts, and an assistant's
	// reasoning_content, with no separator and without the chat template. Each router builds
	// the text it reads from it (production-stack, SGLang and Ray join the texts each their own
	// way: prodStackPrompt, sglangText, rayText); the engine's text (media, tool calls, the
	// template) is not this.
	Text string
	// Pieces are, for a chat, the runs of Text in order; nil for a completion.
	Pieces []Piece
	// Headers are the request's HTTP headers as the log holds them, names in lower case (session
	// keys: production-stack's --session-key, LiteLLM's x-litellm-session-id and
	// x-<vendor>-session-id).
	Headers map[string]string
	// MetadataSession is the body's metadata.session_id, empty when absent (LiteLLM's
	// session_affinity reads it).
	MetadataSession string
	// Partition is the request's cache partition (audit.Request.Partition: cache_salt,
	// extra_key, lora_path), "" when it names none; smg's cache_aware keys its trees by it.
	Partition string
	// SessionParams is the body's session_params.session_id when a string, empty otherwise
	// (vLLM Router routes a chat completion on it).
	SessionParams string
	// PromptIDs is, for a completion whose prompt is token ids, how many (of the first prompt
	// of a batch); BatchLeft counts a batch's prompts after the first. Both are 0 for one text
	// prompt (routers that read the prompt see a placeholder, or refuse a list).
	PromptIDs, BatchLeft int
	// Roles are a chat's message roles, one per message; Lists the JSON, as the body holds
	// it, of each message whose content is a list, in order (AIBrix routes on it).
	Roles, Lists []string
	// CacheKey is a hash of the messages (and tools) up to and including the last message with
	// a cache_control marker, 0 when no message has one: the key LiteLLM's prompt_caching pins.
	// CacheTokens is the estimated token count of that prefix (LiteLLM needs at least 1,024).
	CacheKey    uint64
	CacheTokens int

	// Stored, when set, holds Text, which is "" then: a request log's texts past MemViewBytes
	// are kept in a temporary file, and a replay reads each back as it routes the request.
	Stored *StoredText
	// From is, on the view a replay gives a router, where its Text was read back from
	// (TextFile); nil otherwise.
	From *StoredText
}

// TextFile returns the file v.Text was read back from and where in it the text starts, or nil
// when v.Text is in memory only (a log under MemViewBytes, a trace). The file holds those
// bytes unchanged as long as anything refers to it, so a router keeping parts of the text (its
// tree) may keep their places there instead of copies (chartree.Tree.InsertFrom).
func (v *View) TextFile() (io.ReaderAt, int64) {
	if v.From == nil {
		return nil, 0
	}
	return v.From.file.f, v.From.at
}

// StoredText is where a view's text was moved: size bytes at at of the log's text file.
type StoredText struct {
	file *textFile
	at   int64
	size int
}

// Piece is a run of a chat's View.Text: it ends at End (it starts where the one before ends)
// and Kind says what it is.
type Piece struct {
	End  int32
	Kind PieceKind
}

// PieceKind says what a run of a chat's text is. A message opens with one of the Message kinds;
// a list content's parts and an assistant's reasoning follow it.
type PieceKind uint8

// The kinds of a Piece.
const (
	// PieceString opens a message whose content is a string: the run is the string.
	PieceString PieceKind = iota
	// PieceList opens a message whose content is a list of parts (an empty run); its parts
	// that carry text follow.
	PieceList
	// PieceNull is a message whose content is null, PieceAbsent one without a content member
	// (empty runs).
	PieceNull
	PieceAbsent
	// PiecePartText is a part of type "text" ("" without a text member), PiecePartOther the
	// text member of a part of another type (input_text, a part without a type).
	PiecePartText
	PiecePartOther
	// PieceReasoning is an assistant message's reasoning_content.
	PieceReasoning
)

// opens reports whether a piece of kind k starts a message.
func (k PieceKind) opens() bool { return k <= PieceAbsent }

// StringChat is the view of a chat whose messages' contents are the strings given.
func StringChat(contents ...string) *View {
	v := &View{Chat: true, Pieces: make([]Piece, len(contents))}
	v.Text = strings.Join(contents, "")
	end := 0
	for i, c := range contents {
		end += len(c)
		v.Pieces[i] = Piece{End: int32(end), Kind: PieceString}
	}
	return v
}

// CannotRunError says why an emulation cannot run on a trace (a character-based router on a
// trace of block hashes).
type CannotRunError struct {
	Policy, Trace, Reason string
}

func (e *CannotRunError) Error() string {
	return fmt.Sprintf("%s cannot run on %s: %s", e.Policy, e.Trace, e.Reason)
}

// needsView reports whether an emulation can run on t: one that reads the request's text needs
// every request's View.
func needsView(info PolicyInfo, t *Trace) error {
	if !info.NeedsText {
		return nil
	}
	for i := range t.Requests {
		if t.Requests[i].View == nil {
			if t.noView != "" {
				return &CannotRunError{Policy: info.Name, Trace: t.Name, Reason: "it routes on the request's text and headers, and " + t.noView}
			}
			return &CannotRunError{Policy: info.Name, Trace: t.Name, Reason: fmt.Sprintf("it routes on the request's text and headers, and this %s trace holds only block hashes; give the request log (--requests) instead", t.Format)}
		}
	}
	return nil
}

// names returns the names of infos, in order.
func names(infos []PolicyInfo) []string {
	out := make([]string, len(infos))
	for i, e := range infos {
		out[i] = e.Name
	}
	return out
}

// everyName is every name a simulation takes, in the order results are shown: the idealised
// policies, then the emulations.
func everyName(emulations []PolicyInfo) []string {
	return append(PolicyNames(), names(emulations)...)
}

// lookupIn finds a policy or an emulation by name: among the idealised policies and the
// emulations given.
func lookupIn(name string, emulations []PolicyInfo) (PolicyInfo, bool) {
	name = Canonical(name)
	for _, l := range [][]PolicyInfo{Policies(), emulations} {
		for _, p := range l {
			if p.Name == name {
				return p, true
			}
		}
	}
	return PolicyInfo{}, false
}
