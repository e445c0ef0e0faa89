package audit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kvcheck/kvcheck/internal/audit"
)

// A simulator turns a request log into block chains: read requests one at a time, tokenize
// them (Estimator without a server, Server with one), and cut the ids into full blocks.
func ExampleRequestReader() {
	log := `{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hi in twelve words or more, please, thank you."}]}
{"export_id":7,"body":{"prompt":"Once upon a time"}}
`
	rr := audit.NewRequestReader(strings.NewReader(log), 0)
	var tok audit.Tokenizer = audit.Estimator{}
	for {
		req, err := rr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println("skip:", err)
			continue
		}
		toks, err := tok.Tokenize(context.Background(), req)
		if err != nil {
			fmt.Println("tokenize:", err)
			continue
		}
		const blockSize = 16
		fmt.Printf("line %d: chat=%v tokens=%d full blocks=%d exact=%v\n", req.Line, req.Chat, len(toks.IDs), len(toks.IDs)/blockSize, toks.Exact)
	}
	// Output:
	// line 1: chat=true tokens=22 full blocks=1 exact=false
	// line 2: chat=false tokens=4 full blocks=0 exact=false
}
