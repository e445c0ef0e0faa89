package benchdata

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

const usageText = `usage: benchdata dashboards DIR [N [MB]] | dashboard FILE [PANELS] | requests FILE [MB] | decode [-j N] PATH...`

// Main runs the benchdata command on its arguments, the corpus directory and where to say
// what it wrote.
func Main(args []string, corpus string, out io.Writer) error {
	if len(args) < 2 {
		return errors.New(usageText)
	}
	num := func(i int, def int64) (int64, error) {
		if len(args) <= i {
			return def, nil
		}
		n, err := strconv.ParseInt(args[i], 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q: want a positive whole number (%s)", args[i], usageText)
		}
		return n, nil
	}
	if args[0] != "decode" && corpus == "" {
		return errors.New("set KVCHECK_CORPUS to the shared corpus directory")
	}
	switch args[0] {
	case "dashboards":
		n, err := num(2, 13760)
		if err != nil {
			return err
		}
		mb, err := num(3, 200)
		if err != nil {
			return err
		}
		c, err := LoadCorpus(corpus)
		if err != nil {
			return err
		}
		st, err := c.Dashboards(args[1], int(n), mb<<20, 1)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%d dashboards, %d panels, %d queries, %d minified, %d bytes\n", st.Files, st.Panels, st.Queries, st.Minified, st.Bytes)
		return err
	case "dashboard":
		n, err := num(2, 20000)
		if err != nil {
			return err
		}
		c, err := LoadCorpus(corpus)
		if err != nil {
			return err
		}
		f, err := os.Create(args[1])
		if err != nil {
			return err
		}
		st, err := c.BigDashboard(f, int(n), 1)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "1 dashboard, %d panels, %d queries, %d bytes\n", st.Panels, st.Queries, st.Bytes)
		return err
	case "requests":
		mb, err := num(2, 449)
		if err != nil {
			return err
		}
		f, err := os.Create(args[1])
		if err != nil {
			return err
		}
		st, err := RequestLog(corpus, f, mb<<20)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%d requests (%d passes over the trace), %d bytes\n", st.Requests, st.Passes, st.Bytes)
		return err
	case "decode":
		paths, jobs := args[1:], int64(1)
		if len(paths) > 1 && paths[0] == "-j" {
			n, err := num(2, 1)
			if err != nil {
				return err
			}
			paths, jobs = paths[2:], n
		}
		st, err := DecodeJobs(paths, int(jobs))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "decoded %d files, %d bytes\n", st.Files, st.Bytes)
		return err
	}
	return errors.New(usageText)
}
