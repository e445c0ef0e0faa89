package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kvcheck/kvcheck/internal/secret"
)

// A run that stops with an error before it has any result (a config it cannot read, a
// baseline or input it cannot open) still leaves what a CI job reads whatever the exit code:
// a SARIF log that records the failed run, so an upload step with if: always() uploads "kvcheck
// failed" instead of failing on a missing file and leaving the last good analysis standing;
// and the step summary, saying the command checked nothing and why.

type sarifInvocation struct {
	ExecutionSuccessful bool                `json:"executionSuccessful"`
	Notifications       []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level   string       `json:"level"`
	Message sarifMessage `json:"message"`
}

// failedSARIF is the SARIF log of a run that failed: no results, and one invocation that did
// not succeed, with the error as its notification.
type failedSARIF struct {
	Schema  string           `json:"$schema"`
	Version string           `json:"version"`
	Runs    []failedSARIFRun `json:"runs"`
}

type failedSARIFRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Results     []sarifResult     `json:"results"`
}

// WriteFailure writes the record of a failed run to each SARIF output (standard output's to
// stdout, a file's whole) and, when summary names the step summary file, appends the error to
// it under a heading naming the command. Other formats get nothing: their readers see the exit
// code and standard error.
func WriteFailure(stdout io.Writer, outs []Output, command string, failure error, o Options, summary string) error {
	msg := secret.Mask(failure.Error())
	log := failedSARIF{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs: []failedSARIFRun{{
			Tool: sarifTool{Driver: sarifDriver{Name: "kvcheck", Version: o.Version,
				InformationURI: "https://github.com/kvcheck/kvcheck", Rules: []sarifRule{}}},
			Invocations: []sarifInvocation{{ExecutionSuccessful: false, Notifications: []sarifNotification{{
				Level: "error", Message: sarifMessage{Text: command + " stopped before checking anything: " + msg}}}}},
			Results: []sarifResult{},
		}},
	}
	var errs []error
	for _, out := range outs {
		if out.Format != FormatSARIF {
			continue
		}
		if out.Path == "" {
			errs = append(errs, JSON(stdout, log))
			continue
		}
		if err := writeFile(out.Path, func(w io.Writer) error { return JSON(w, log) }); err != nil {
			errs = append(errs, fmt.Errorf("--output %s=%s: %w", out.Format, out.Path, err))
		}
	}
	if summary != "" {
		errs = append(errs, appendFailureSummary(summary, command, msg))
	}
	return errors.Join(errs...)
}

func appendFailureSummary(path, command, msg string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n**Stopped with an error before checking anything:**\n\n%s\n\n", mdEscape(command), mdEscape(msg))
	_, werr := io.WriteString(f, b.String())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY %s: %w", path, werr)
	}
	return nil
}
