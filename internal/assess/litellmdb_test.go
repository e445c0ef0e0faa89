package assess

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/litellmdb/litellmdbtest"
	"github.com/kvcheck/kvcheck/internal/report"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

// TestAssessLiteLLMDatabase: assess on LiteLLM's database gives the verdict and every figure
// that assess on the same rows exported as JSONL gives (the README's psql export). 24 support
// sessions of 4 turns share a long system prompt and their own conversations: 96 requests.
func TestAssessLiteLLMDatabase(t *testing.T) {
	dsn := testutil.Postgres(t, "litellm")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	litellmdbtest.Create(t, ctx, conn)
	litellmdbtest.Insert(t, ctx, conn, litellmdbtest.Conversations(24, 4, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)))
	export := filepath.Join(t.TempDir(), "spendlogs.jsonl")
	if err := os.WriteFile(export, []byte(litellmdbtest.Export(t, ctx, conn)), 0o600); err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, path := range []string{dsn, export} {
		o := Options{Thresholds: advise.DefaultThresholds(), Replicas: 4, KVTokens: 1536}
		rec, rk, err := Run(ctx, report.NewStatus(io.Discard), Sources{Requests: path}, o)
		if err != nil {
			t.Fatalf("assess %s: %v", path, err)
		}
		res := report.AssessRanked(rec, rk)
		var buf bytes.Buffer
		if err := report.Write(&buf, report.FormatJSON, res, report.Options{}); err != nil {
			t.Fatal(err)
		}
		doc := buf.String()
		if strings.Contains(doc, testutil.PostgresPassword) {
			t.Errorf("the report of %s shows the password", path)
		}
		docs[path] = doc
	}
	// The two differ in the log's name only.
	db := docs[dsn]
	for _, name := range []string{`LiteLLM_SpendLogs at ` + strings.Replace(dsn, testutil.PostgresPassword, "xxxxx", 1)} {
		db = strings.ReplaceAll(db, name, export)
	}
	if diff := cmp.Diff(docs[export], db); diff != "" {
		t.Errorf("assess on the database differs from assess on its export (-export +db):\n%s", diff)
	}
	if !strings.Contains(docs[export], `"recommendation"`) && !strings.Contains(docs[export], `"verdict"`) {
		t.Errorf("no verdict in the report:\n%.2000s", docs[export])
	}
}
