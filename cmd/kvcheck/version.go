package main

import (
	"github.com/spf13/cobra"

	"github.com/kvcheck/kvcheck/internal/cli"
	"github.com/kvcheck/kvcheck/internal/report"
)

// Set by a release build's linker flags (-X main.buildVersion=v0.3.0 -X main.buildCommit=...
// -X main.buildDate=...; .goreleaser.yaml and scripts/dist.sh). A build from a checkout leaves
// them empty and Go's build information stands in: the module version, the VCS revision and
// its time. They are the only package-level variables of the command, because -X can set
// nothing else.
var (
	buildVersion string
	buildCommit  string
	buildDate    string
)

// buildInfo is what this binary knows about its own build.
func buildInfo() report.Build { return cli.Build(buildVersion, buildCommit, buildDate) }

func newVersionCmd(_ streams, g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date, Go version and the catalog's newest releases",
		Long: `version prints what this kvcheck is, for a CI log to record: its release (or devel), the
commit it was built from (and whether the work tree was modified), the commit's time, the date
of a release build, the Go version and platform, and the newest release of each family its
metric catalog knows (what lint judges against when no --target is given). -o json gives the
same as a document. --version prints the same text.

` + exitCodesHelp,
		Example: `  kvcheck version
  kvcheck version -o json`,
		Args: noArgs,
		RunE: g.command(func(*cobra.Command, []string) (report.Result, error) {
			return report.Version(buildInfo()), nil
		}),
	}
}
