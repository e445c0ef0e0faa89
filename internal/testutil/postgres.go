package testutil

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresPassword is the password of the server Postgres starts (user kvcheck): the tests
// check that no output shows it.
const PostgresPassword = "s3cret-Pw-for-kvcheck"

// Postgres starts a PostgreSQL server of its own for the test (Debian's postgresql package:
// initdb into a temporary directory, pg_ctl start on a unix socket there, password
// authentication for user kvcheck), creates database db, and returns its address,
// postgres://kvcheck:PASSWORD@/db?host=DIR. The server is stopped and its directory removed
// at the end of the test. PostgreSQL refuses to run as root: as root the server runs as the
// user nobody. Without the binaries the test is skipped when it could not install them (not
// root), and fails as root, where scripts/install-deps.sh (make test) installs them.
func Postgres(t testing.TB, db string) string {
	t.Helper()
	bin, err := postgresBin()
	if err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("PostgreSQL is not installed (%v): run scripts/install-deps.sh (Debian package postgresql), as make test does", err)
		}
		t.Skipf("PostgreSQL is not installed (%v): scripts/install-deps.sh installs it (Debian package postgresql), as root", err)
	}
	dir, err := os.MkdirTemp("", "kvcheck-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs another user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(PostgresPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(pw, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C", "TZ=UTC"}
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("%s %v: %v\n%s\n%s", name, args, err, out, log)
		}
	}
	data := filepath.Join(dir, "data")
	run("initdb", "-D", data, "-U", "kvcheck", "--pwfile", pw, "--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C", "--no-sync")
	// pg_ctl -w returns once the server accepts connections.
	run("pg_ctl", "-w", "-t", "60", "-D", data, "-l", filepath.Join(dir, "log"),
		"-o", fmt.Sprintf("-k %s -c listen_addresses= -c fsync=off -c timezone=UTC", dir), "start")
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(bin, "pg_ctl"), "-w", "-D", data, "-m", "immediate", "stop")
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		_ = cmd.Run() // the directory goes either way
	})
	admin := (&url.URL{Scheme: "postgres", User: url.UserPassword("kvcheck", PostgresPassword), Path: "/postgres", RawQuery: "host=" + url.QueryEscape(dir)}).String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", db, err)
	}
	return (&url.URL{Scheme: "postgres", User: url.UserPassword("kvcheck", PostgresPassword), Path: "/" + db, RawQuery: "host=" + url.QueryEscape(dir)}).String()
}

// postgresBin finds the directory of initdb and pg_ctl: on PATH, else Debian's
// /usr/lib/postgresql/<version>/bin (the newest), which Debian does not put on PATH.
func postgresBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			real, err := filepath.EvalSymlinks(p)
			if err == nil {
				return filepath.Dir(real), nil
			}
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no initdb on PATH or under /usr/lib/postgresql/*/bin")
}
