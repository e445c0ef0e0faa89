// Package litellmdbtest seeds a PostgreSQL database with LiteLLM's spend-log table and rows in
// its schema, for the tests of the readers of that database.
package litellmdbtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Schema is LiteLLM_SpendLogs as LiteLLM's Prisma schema declares it (schema.prisma, model
// LiteLLM_SpendLogs, BerriAI/litellm@029f645f1c81cbd6c6c48fbc8490d91da937066f), in the types
// Prisma gives PostgreSQL (String TEXT, Int INTEGER, Float DOUBLE PRECISION, DateTime
// TIMESTAMP(3), Json JSONB), with its indexes.
const Schema = `CREATE TABLE "LiteLLM_SpendLogs" (
	"request_id" TEXT NOT NULL,
	"call_type" TEXT NOT NULL,
	"api_key" TEXT NOT NULL DEFAULT '',
	"spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0,
	"total_tokens" INTEGER NOT NULL DEFAULT 0,
	"prompt_tokens" INTEGER NOT NULL DEFAULT 0,
	"completion_tokens" INTEGER NOT NULL DEFAULT 0,
	"startTime" TIMESTAMP(3) NOT NULL,
	"endTime" TIMESTAMP(3) NOT NULL,
	"request_duration_ms" INTEGER,
	"completionStartTime" TIMESTAMP(3),
	"model" TEXT NOT NULL DEFAULT '',
	"model_id" TEXT DEFAULT '',
	"model_group" TEXT DEFAULT '',
	"custom_llm_provider" TEXT DEFAULT '',
	"api_base" TEXT DEFAULT '',
	"user" TEXT DEFAULT '',
	"metadata" JSONB DEFAULT '{}',
	"cache_hit" TEXT DEFAULT '',
	"cache_key" TEXT DEFAULT '',
	"request_tags" JSONB DEFAULT '[]',
	"team_id" TEXT,
	"organization_id" TEXT,
	"end_user" TEXT,
	"requester_ip_address" TEXT,
	"messages" JSONB DEFAULT '{}',
	"response" JSONB DEFAULT '{}',
	"session_id" TEXT,
	"status" TEXT,
	"mcp_namespaced_tool_name" TEXT,
	"agent_id" TEXT,
	"proxy_server_request" JSONB DEFAULT '{}',
	CONSTRAINT "LiteLLM_SpendLogs_pkey" PRIMARY KEY ("request_id")
);
CREATE INDEX "LiteLLM_SpendLogs_startTime_idx" ON "LiteLLM_SpendLogs"("startTime");
CREATE INDEX "LiteLLM_SpendLogs_startTime_request_id_idx" ON "LiteLLM_SpendLogs"("startTime", "request_id");
CREATE INDEX "LiteLLM_SpendLogs_end_user_idx" ON "LiteLLM_SpendLogs"("end_user");
CREATE INDEX "LiteLLM_SpendLogs_session_id_idx" ON "LiteLLM_SpendLogs"("session_id");`

// Row is one spend-log row, in the columns the seeds set.
type Row struct {
	RequestID, CallType, Model, SessionID, Status string
	Start                                         time.Time
	CompletionTokens                              int
	// Request is proxy_server_request ("{}" when nil, as LiteLLM stores it without
	// store_prompts_in_spend_logs); Messages the messages column ("{}" when nil).
	Request, Messages any
	Metadata          any
}

// Create makes the table.
func Create(t testing.TB, ctx context.Context, conn *pgx.Conn) {
	t.Helper()
	if _, err := conn.Exec(ctx, Schema); err != nil {
		t.Fatalf("create LiteLLM_SpendLogs: %v", err)
	}
}

// Insert writes rows as LiteLLM's proxy does (one row a request, the JSON columns as JSONB).
func Insert(t testing.TB, ctx context.Context, conn *pgx.Conn, rows []Row) {
	t.Helper()
	js := func(v any) string {
		if v == nil {
			return "{}"
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	batch := &pgx.Batch{}
	for _, r := range rows {
		var sess, status any
		if r.SessionID != "" {
			sess = r.SessionID
		}
		if r.Status != "" {
			status = r.Status
		}
		batch.Queue(`INSERT INTO "LiteLLM_SpendLogs" (request_id, call_type, "startTime", "endTime", model, session_id, status,
			completion_tokens, prompt_tokens, total_tokens, proxy_server_request, messages, metadata, response, api_key, spend)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $8, $9::jsonb, $10::jsonb, $11::jsonb, '{"id":"resp"}'::jsonb, 'hashed-key', 0.0001)`,
			r.RequestID, r.CallType, r.Start.UTC(), r.Start.UTC().Add(800*time.Millisecond), r.Model, sess, status,
			r.CompletionTokens, js(r.Request), js(r.Messages), js(r.Metadata))
	}
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		t.Fatalf("insert spend-log rows: %v", err)
	}
}

// Export writes the table as `SELECT row_to_json(s) FROM "LiteLLM_SpendLogs" s` does (the
// README's export), one row a line, in startTime order.
func Export(t testing.TB, ctx context.Context, conn *pgx.Conn) string {
	t.Helper()
	rows, err := conn.Query(ctx, `SELECT row_to_json(s)::text FROM "LiteLLM_SpendLogs" s ORDER BY "startTime", request_id`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n") + "\n"
}

// Conversations makes sessions chat sessions of turns requests each, as a support agent's
// traffic through LiteLLM: one long system prompt and the same tools for all, every turn
// repeating the conversation so far, client-sent session ids, a second apart within a session
// and the sessions interleaved.
func Conversations(sessions, turns int, start time.Time) []Row {
	system := "You are the support agent of Acme. " + strings.Repeat("Answer politely, cite the order number, and never promise a refund you cannot give. ", 24)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup_order", "parameters": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}}}}}
	var rows []Row
	for turn := 0; turn < turns; turn++ {
		for s := 0; s < sessions; s++ {
			msgs := []any{map[string]any{"role": "system", "content": system}}
			for k := 0; k <= turn; k++ {
				msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("Session %d asks question %d about order %d.", s, k, 1000+s)})
				if k < turn {
					msgs = append(msgs, map[string]any{"role": "assistant", "content": fmt.Sprintf("Answer %d for session %d: your order %d ships soon.", k, s, 1000+s)})
				}
			}
			i := turn*sessions + s
			rows = append(rows, Row{
				RequestID: fmt.Sprintf("chatcmpl-%04d", i), CallType: "acompletion", Model: "qwen",
				SessionID: fmt.Sprintf("support-%03d", s), Start: start.Add(time.Duration(i) * time.Second),
				CompletionTokens: 40 + s%7,
				Request:          map[string]any{"model": "qwen", "messages": msgs, "tools": tools, "max_tokens": 512},
			})
		}
	}
	return rows
}
