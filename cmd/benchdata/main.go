// Command benchdata writes the large inputs of BENCHMARKS.md from the corpus, and decodes a
// tree of JSON files as the lint figures' reference:
//
//	benchdata dashboards DIR [N [MB]]   N dashboards of about MB in all (13760, 200)
//	benchdata dashboard FILE [PANELS]   one minified dashboard (20000 panels)
//	benchdata requests FILE [MB]        a request log from the Mooncake trace (449 MB)
//	benchdata decode [-j N] PATH...     json.Unmarshal of every file, one after another
//	                                    (on N goroutines with -j)
//
// The corpus is $KVCHECK_CORPUS.
package main

import (
	"fmt"
	"os"

	"github.com/kvcheck/kvcheck/internal/benchdata"
)

func main() {
	if err := benchdata.Main(os.Args[1:], os.Getenv("KVCHECK_CORPUS"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchdata:", err)
		os.Exit(1)
	}
}
