// Package litellmdb reads the request log LiteLLM's proxy keeps in its PostgreSQL database: the
// rows of LiteLLM_SpendLogs, one JSON object a row, in the shape `SELECT row_to_json(s) FROM
// "LiteLLM_SpendLogs" s` exports, so that kvcheck reads the database and such an export alike.
//
// The table and its columns are LiteLLM's own (schema.prisma, model LiteLLM_SpendLogs,
// BerriAI/litellm@029f645f1c81cbd6c6c48fbc8490d91da937066f:schema.prisma): request_id,
// call_type, "startTime", model, session_id, messages, proxy_server_request, completion_tokens,
// metadata and the rest. The request as the client sent it is in proxy_server_request, and in
// metadata.proxy_server_request in the versions before that column; messages is "{}" in
// current versions; all three are "{}" unless the proxy runs with
// general_settings.store_prompts_in_spend_logs: true (BerriAI/litellm@00907c60692d7d14dc7ea814e645165d3b4d5fe9:
// litellm/proxy/spend_tracking/spend_tracking_utils.py, _get_proxy_server_request_for_spend_logs_payload
// and _should_store_prompts_and_responses_in_spend_logs).
//
// Rows are read through a server-side cursor in a read-only REPEATABLE READ transaction, in
// "startTime" order (the table's index), FetchRows at a time, each row sent whole by the
// server: memory holds one row (at most Window.MaxRow bytes; a longer one comes back as a
// stub saying its length) and the driver's buffers, however many rows the window holds.
// Several reads of one DB (kvcheck assess reads the log three times) see the same rows: the
// transaction's snapshot.
package litellmdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Table is LiteLLM's request log table.
const Table = "LiteLLM_SpendLogs"

// DefaultMaxRows is the most rows one read takes unless told otherwise (--max-rows).
const DefaultMaxRows = 1_000_000

// FetchRows is how many rows one FETCH asks the cursor for.
const FetchRows = 1000

// DefaultMaxRow bounds one row's JSON text (64 MiB, the request reader's longest line).
const DefaultMaxRow = 64 << 20

// columns are the table's columns the request reader uses, in LiteLLM's schema; a table
// without some of them (an older LiteLLM) is read with those it has.
var columns = []string{
	"request_id", "call_type", "startTime", "endTime", "model", "model_group", "session_id",
	"status", "prompt_tokens", "completion_tokens", "messages", "proxy_server_request", "metadata",
}

// required are the columns without which the table is not LiteLLM's spend log.
var required = []string{"request_id", "call_type", "startTime"}

// Window bounds one read: rows whose "startTime" is at or after Since and before Until (zero:
// unbounded), at most MaxRows of them (DefaultMaxRows when 0), each at most MaxRow bytes of
// JSON (DefaultMaxRow when 0).
type Window struct {
	Since, Until    time.Time
	MaxRows, MaxRow int
}

// Describe writes the window for messages.
func (w Window) Describe() string {
	const layout = "2006-01-02 15:04:05 UTC"
	switch {
	case !w.Since.IsZero() && !w.Until.IsZero():
		return fmt.Sprintf("startTime from %s to %s", w.Since.UTC().Format(layout), w.Until.UTC().Format(layout))
	case !w.Since.IsZero():
		return "startTime from " + w.Since.UTC().Format(layout)
	case !w.Until.IsZero():
		return "startTime before " + w.Until.UTC().Format(layout)
	}
	return "every startTime"
}

// Given reports whether any bound of the window is set.
func (w Window) Given() bool {
	return !w.Since.IsZero() || !w.Until.IsZero() || w.MaxRows != 0
}

// IsDSN reports whether s names a PostgreSQL database rather than a file.
func IsDSN(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Shown is the address as messages show it: the password, in the user part or as a password
// parameter, replaced by xxxxx. An address that does not parse is shown by its scheme only.
func Shown(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		scheme, _, _ := strings.Cut(dsn, "://")
		return scheme + "://(an address that does not parse)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// DB is one connection to LiteLLM's database and the read-only transaction every read of it
// shares.
type DB struct {
	shown  string
	secret string
	conn   *pgx.Conn
	tx     pgx.Tx
	cols   []string
	reads  int
}

// Connect opens the database at dsn and checks that it holds LiteLLM's spend log.
func Connect(ctx context.Context, dsn string) (*DB, error) {
	db := &DB{shown: Shown(dsn)}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("--requests %s: not a PostgreSQL address: want postgres://user:password@host:5432/litellm (LiteLLM's DATABASE_URL)", db.shown)
	}
	if u.User != nil {
		db.secret, _ = u.User.Password()
	}
	if db.secret == "" {
		db.secret = u.Query().Get("password")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("--requests %s: not a PostgreSQL address (%s): want postgres://user:password@host:5432/litellm (LiteLLM's DATABASE_URL)", db.shown, db.hide(parseReason(err)))
	}
	cfg.RuntimeParams["application_name"] = "kvcheck"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot connect: %s: check the host, port, user and password (LiteLLM's DATABASE_URL)", db.shown, db.hide(connectReason(err)))
	}
	db.conn = conn
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: begin a read-only transaction: %s", db.shown, db.hide(err.Error()))
	}
	db.tx = tx
	if err := db.readColumns(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// parseReason is pgx's reason for refusing an address, without the address (which its message
// quotes, with the password masked at best effort).
func parseReason(err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) && pe.Unwrap() != nil {
		var ue *url.Error
		if errors.As(pe.Unwrap(), &ue) {
			return ue.Err.Error()
		}
	}
	return "pgx could not read it"
}

// connectReason is why a connection failed, as the server or the network said it.
func connectReason(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && ce.Unwrap() != nil {
		// One line per attempt (TLS, then plain, with sslmode=prefer): the same reason
		// twice is said once.
		var lines []string
		for l := range strings.SplitSeq(ce.Unwrap().Error(), "\n") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(lines, l) {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "; ")
	}
	return err.Error()
}

// hide takes the password out of a message from the driver or the server.
func (db *DB) hide(s string) string {
	if db.secret != "" {
		s = strings.ReplaceAll(s, db.secret, "xxxxx")
		if esc := url.QueryEscape(db.secret); esc != db.secret {
			s = strings.ReplaceAll(s, esc, "xxxxx")
		}
	}
	return s
}

// Shown is the database's address as messages show it (no password).
func (db *DB) Shown() string { return db.shown }

// Close ends the transaction and the connection.
func (db *DB) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if db.tx != nil {
		_ = db.tx.Rollback(ctx) // read only: nothing to keep
	}
	if db.conn != nil {
		_ = db.conn.Close(ctx)
	}
}

// readColumns finds the spend log table's columns, and refuses a database without it.
func (db *DB) readColumns(ctx context.Context) error {
	rows, err := db.tx.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_name = $1 AND table_schema = ANY (current_schemas(false)) ORDER BY ordinal_position`, Table)
	if err != nil {
		return fmt.Errorf("%s: read the columns of %s: %s", db.shown, Table, db.hide(err.Error()))
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("%s: read the columns of %s: %s", db.shown, Table, db.hide(err.Error()))
	}
	if len(have) == 0 {
		return fmt.Errorf("%s: no table %q in the schemas on the search path: give the database LiteLLM's proxy writes (its DATABASE_URL), and start the proxy with a database so that it keeps spend logs", db.shown, Table)
	}
	for _, c := range required {
		if !slices.Contains(have, c) {
			return fmt.Errorf("%s: table %q has no column %s: it is not LiteLLM's spend log (schema.prisma, model LiteLLM_SpendLogs)", db.shown, Table, c)
		}
	}
	for _, c := range columns {
		if slices.Contains(have, c) {
			db.cols = append(db.cols, c)
		}
	}
	return nil
}

// Missing names the columns of LiteLLM's current schema the table lacks (an older LiteLLM).
func (db *DB) Missing() []string {
	var out []string
	for _, c := range columns {
		if !slices.Contains(db.cols, c) {
			out = append(out, c)
		}
	}
	return out
}

// query is the cursor's SELECT for the window: the rows as JSON, a row longer than maxRow as a
// stub with its request id and length.
func (db *DB) query(w Window) (string, []any) {
	sel := make([]string, len(db.cols))
	for i, c := range db.cols {
		sel[i] = pgx.Identifier{c}.Sanitize()
	}
	var where []string
	var args []any
	if !w.Since.IsZero() {
		args = append(args, w.Since.UTC())
		where = append(where, fmt.Sprintf(`"startTime" >= $%d`, len(args)))
	}
	if !w.Until.IsZero() {
		args = append(args, w.Until.UTC())
		where = append(where, fmt.Sprintf(`"startTime" < $%d`, len(args)))
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, w.MaxRows)
	limit := len(args)
	args = append(args, w.MaxRow)
	// The timestamps are LiteLLM's, in UTC (it converts startTime to UTC before it writes);
	// the JSON writes them as the export does. A row's text is measured before it is sent.
	q := fmt.Sprintf(`SELECT CASE WHEN octet_length(j) <= $%d THEN j
		ELSE json_build_object('request_id', request_id, 'call_type', call_type, 'startTime', "startTime", 'kvcheck_row_bytes', octet_length(j))::text END
		FROM (SELECT request_id, call_type, "startTime", row_to_json(s)::text AS j
			FROM (SELECT %s FROM %s%s ORDER BY "startTime", request_id LIMIT $%d) s) r`,
		len(args), strings.Join(sel, ", "), pgx.Identifier{Table}.Sanitize(), cond, limit)
	return q, args
}

// Rows opens a read of the rows in w (see Window): a reader of JSONL, one row a line.
func (db *DB) Rows(ctx context.Context, w Window) (*Rows, error) {
	if w.MaxRows <= 0 {
		w.MaxRows = DefaultMaxRows
	}
	if w.MaxRow <= 0 {
		w.MaxRow = DefaultMaxRow
	}
	db.reads++
	name := fmt.Sprintf("kvcheck_rows_%d", db.reads)
	q, args := db.query(w)
	if _, err := db.tx.Exec(ctx, "DECLARE "+name+" NO SCROLL CURSOR FOR "+q, args...); err != nil {
		return nil, fmt.Errorf("%s: read %s: %s", db.shown, Table, db.hide(err.Error()))
	}
	return &Rows{db: db, ctx: ctx, cursor: name, w: w}, nil
}

// Rows is one read of the spend log: JSONL, one row a line, in startTime order.
type Rows struct {
	db     *DB
	ctx    context.Context
	cursor string
	w      Window
	rows   pgx.Rows // the current FETCH
	got    int      // rows in the current FETCH
	n      int      // rows read in all
	line   []byte
	pos    int
	done   error
}

// Name is the read as messages call it: the table, the address without password, the window.
func (r *Rows) Name() string {
	return fmt.Sprintf("%s at %s (%s)", Table, r.db.shown, r.w.Describe())
}

// Read hands out the rows as JSONL.
func (r *Rows) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.pos < len(r.line) {
			c := copy(p[n:], r.line[r.pos:])
			r.pos += c
			n += c
			continue
		}
		if r.done != nil {
			break
		}
		row, err := r.next()
		if err != nil {
			r.done = err
			continue
		}
		r.line = append(append(r.line[:0], row...), '\n')
		r.pos = 0
	}
	if n == 0 && r.done != nil {
		return 0, r.done
	}
	return n, nil
}

// next returns the next row's JSON, fetching the next batch when the current one is read.
func (r *Rows) next() ([]byte, error) {
	for {
		if r.rows == nil {
			rows, err := r.db.tx.Query(r.ctx, fmt.Sprintf("FETCH FORWARD %d FROM %s", FetchRows, r.cursor))
			if err != nil {
				return nil, r.fail(err)
			}
			r.rows, r.got = rows, 0
		}
		if r.rows.Next() {
			var j []byte
			if err := r.rows.Scan(&j); err != nil {
				r.rows.Close()
				return nil, r.fail(err)
			}
			r.got++
			r.n++
			return j, nil
		}
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return nil, r.fail(err)
		}
		got := r.got
		r.rows = nil
		if got < FetchRows {
			if r.n == 0 {
				return nil, fmt.Errorf("%s: no rows: widen --since/--until, or check that the proxy writes spend logs (it needs a database, and writes in batches, about once a minute)", r.Name())
			}
			return nil, io.EOF
		}
	}
}

func (r *Rows) fail(err error) error {
	if ctxErr := r.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return fmt.Errorf("%s: %s", r.Name(), r.db.hide(err.Error()))
}

// Notes say what the read covered, once it is done.
func (r *Rows) Notes() []string {
	notes := []string{fmt.Sprintf("read %d rows of %s (%s), in startTime order", r.n, Table, r.w.Describe())}
	if r.n >= r.w.MaxRows {
		notes = append(notes, fmt.Sprintf("stopped at --max-rows %d: later rows of the window were not read", r.w.MaxRows))
	}
	if m := r.db.Missing(); len(m) > 0 {
		notes = append(notes, fmt.Sprintf("the table has no %s column (an older LiteLLM): read without", strings.Join(m, ", ")))
	}
	return notes
}

// Close closes the cursor; the DB stays open for the next read.
func (r *Rows) Close() error {
	if r.rows != nil {
		r.rows.Close()
		r.rows = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = r.db.tx.Exec(ctx, "CLOSE "+r.cursor) // a failed transaction closed it already
	return nil
}
