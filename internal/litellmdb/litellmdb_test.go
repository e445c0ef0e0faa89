package litellmdb_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/litellmdb"
	"github.com/kvcheck/kvcheck/internal/litellmdb/litellmdbtest"
	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// seeded starts a server with the table and rows, and returns its address and a connection.
func seeded(t *testing.T, rows []litellmdbtest.Row) (string, *pgx.Conn) {
	t.Helper()
	dsn := testutil.Postgres(t, "litellm")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	litellmdbtest.Create(t, ctx, conn)
	litellmdbtest.Insert(t, ctx, conn, rows)
	return dsn, conn
}

func TestDatabase(t *testing.T) {
	// 30 sessions x 4 turns = 120 requests, plus rows the reader must leave out or skip: an
	// embedding call, a failed call, a row stored without its request (store_prompts off), and
	// a row of 2,500 more so that the cursor takes three FETCHes of 1,000.
	rows := litellmdbtest.Conversations(30, 4, t0)
	rows = append(rows,
		litellmdbtest.Row{RequestID: "emb-1", CallType: "aembedding", Start: t0.Add(200 * time.Second)},
		litellmdbtest.Row{RequestID: "fail-1", CallType: "acompletion", Status: "failure", Start: t0.Add(201 * time.Second), Request: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}},
		litellmdbtest.Row{RequestID: "empty-1", CallType: "acompletion", Start: t0.Add(202 * time.Second)},
	)
	dsn, conn := seeded(t, rows)
	ctx := context.Background()

	t.Run("same as the JSONL export", func(t *testing.T) {
		export := filepath.Join(t.TempDir(), "spendlogs.jsonl")
		if err := os.WriteFile(export, []byte(litellmdbtest.Export(t, ctx, conn)), 0o600); err != nil {
			t.Fatal(err)
		}
		audits := map[string]audit.Summary{}
		traces := map[string]*sim.Trace{}
		for _, path := range []string{dsn, export} {
			src, err := audit.OpenSource(ctx, path, nil, audit.SourceOptions{})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			sum, err := audit.AuditRequests(ctx, src, audit.RequestOptions{})
			_ = src.Close()
			if err != nil {
				t.Fatalf("audit %s: %v", path, err)
			}
			audits[path] = sum
			src, err = audit.OpenSource(ctx, path, nil, audit.SourceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := sim.ReadRequests(ctx, src, "log", sim.RequestLogOptions{})
			_ = src.Close()
			if err != nil {
				t.Fatalf("read %s: %v", path, err)
			}
			traces[path] = tr
		}
		db, file := audits[dsn], audits[export]
		// 120 chats; the failed call and the embedding left out, the empty row skipped.
		if db.Requests != 120 || db.Chat != 120 || db.Skipped != 1 {
			t.Errorf("requests %d, chat %d, skipped %d; want 120, 120, 1", db.Requests, db.Chat, db.Skipped)
		}
		// The 30 client-sent session ids, each with 4 requests.
		if db.Sessions != 30 || db.RepeatedSessions != 30 || db.FollowUps != 90 {
			t.Errorf("sessions %d (repeated %d), follow-ups %d; want 30 (30), 90", db.Sessions, db.RepeatedSessions, db.FollowUps)
		}
		if diff := cmp.Diff(file, db, cmpopts.IgnoreFields(audit.Summary{}, "Source")); diff != "" {
			t.Errorf("audit of the database differs from the audit of its export (-export +db):\n%s", diff)
		}
		tdb, tfile := traces[dsn], traces[export]
		if diff := cmp.Diff(tfile.Requests, tdb.Requests, cmpopts.IgnoreFields(sim.Request{}, "View")); diff != "" {
			t.Errorf("trace of the database differs from the trace of its export (-export +db):\n%s", diff)
		}
		// Arrivals from startTime (a second apart), output lengths from completion_tokens.
		if r := tdb.Requests[31]; r.Arrival != 31 || r.OutputTokens != 40+1%7 || r.Session != "support-001" {
			t.Errorf("request 31: arrival %g, output %d, session %q; want 31, 41, support-001", r.Arrival, r.OutputTokens, r.Session)
		}
		if tdb.SyntheticArrivals {
			t.Error("arrivals are synthetic; want them from startTime")
		}
	})

	t.Run("window", func(t *testing.T) {
		db, err := litellmdb.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, tc := range []struct {
			name string
			w    litellmdb.Window
			want int
		}{
			// Rows i start at t0+i s: [30 s, 60 s) holds 30 rows.
			{"since and until", litellmdb.Window{Since: t0.Add(30 * time.Second), Until: t0.Add(60 * time.Second)}, 30},
			{"since", litellmdb.Window{Since: t0.Add(100 * time.Second)}, 20 + 3},
			{"max rows", litellmdb.Window{MaxRows: 7}, 7},
			{"every row", litellmdb.Window{}, 123},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rows, err := db.Rows(ctx, tc.w)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(rows)
				_ = rows.Close()
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Count(string(b), "\n"); got != tc.want {
					t.Errorf("%d rows; want %d", got, tc.want)
				}
			})
		}
		rows, err := db.Rows(ctx, litellmdb.Window{Since: t0.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(rows)
		_ = rows.Close()
		if err == nil || !strings.Contains(err.Error(), "no rows: widen --since/--until") {
			t.Errorf("empty window: %v; want an error saying there are no rows", err)
		}
	})

	t.Run("row bound", func(t *testing.T) {
		db, err := litellmdb.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Rows(ctx, litellmdb.Window{MaxRows: 1, MaxRow: 200})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rows)
		_ = rows.Close()
		if !strings.Contains(string(b), `"kvcheck_row_bytes"`) || len(b) > 200 {
			t.Errorf("a row past the bound came back as %d bytes: %.120s; want a stub with its length", len(b), b)
		}
	})
}

func TestDatabaseFetchesInBatches(t *testing.T) {
	// 2,500 rows: two FETCHes of 1,000 and one of 500.
	dsn, _ := seeded(t, litellmdbtest.Conversations(625, 4, t0))
	src, err := audit.OpenSource(context.Background(), dsn, nil, audit.SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }()
	sum, err := audit.AuditRequests(context.Background(), src, audit.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != 2500 {
		t.Errorf("%d requests; want 2500", sum.Requests)
	}
}

func TestDatabaseWithoutPrompts(t *testing.T) {
	// Three rows written with store_prompts_in_spend_logs off: every request column is "{}".
	var rows []litellmdbtest.Row
	for i := range 3 {
		rows = append(rows, litellmdbtest.Row{RequestID: string(rune('a' + i)), CallType: "acompletion", Start: t0.Add(time.Duration(i) * time.Second)})
	}
	dsn, _ := seeded(t, rows)
	src, err := audit.OpenSource(context.Background(), dsn, nil, audit.SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }()
	_, err = audit.AuditRequests(context.Background(), src, audit.RequestOptions{})
	for _, want := range []string{"LiteLLM spend logs", "3 rows, none with the request stored", "store_prompts_in_spend_logs: true"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), testutil.PostgresPassword) {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestConnectErrorsHidePassword(t *testing.T) {
	dsn := testutil.Postgres(t, "litellm")
	wrongPw := strings.Replace(dsn, testutil.PostgresPassword, "not-the-"+testutil.PostgresPassword, 1)
	otherDB := strings.Replace(dsn, "/litellm?", "/postgres?", 1) // exists, has no spend log
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"wrong password", wrongPw, "password authentication failed"},
		{"no such database", strings.Replace(dsn, "/litellm?", "/nodb?", 1), `database "nodb" does not exist`},
		{"no spend log", otherDB, `no table "LiteLLM_SpendLogs"`},
		{"closed port", "postgres://kvcheck:" + testutil.PostgresPassword + "@127.0.0.1:1/litellm?connect_timeout=5", "cannot connect"},
		{"bad address", "postgres://kvcheck:" + testutil.PostgresPassword + "@[::1/litellm", "not a PostgreSQL address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := litellmdb.Connect(context.Background(), tc.dsn)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is on several lines; want one (each reason once)", err)
			}
			if strings.Contains(err.Error(), testutil.PostgresPassword) {
				t.Errorf("the error shows the password: %v", err)
			}
			if !strings.Contains(err.Error(), "xxxxx") && !strings.Contains(err.Error(), "does not parse") {
				t.Errorf("the error does not name the address (masked): %v", err)
			}
		})
	}
}

func TestShown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:secret@db:5432/litellm", "postgres://u:xxxxx@db:5432/litellm"},
		{"postgresql://u@db/litellm?password=secret&sslmode=require", "postgresql://u@db/litellm?password=xxxxx&sslmode=require"},
		{"postgres://db/litellm", "postgres://db/litellm"},
		{"postgres://u:secret@[::1/x", "postgres://(an address that does not parse)"},
	} {
		if got := litellmdb.Shown(tc.in); got != tc.want {
			t.Errorf("Shown(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
