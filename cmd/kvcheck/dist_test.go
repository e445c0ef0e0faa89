package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestDist runs make dist's script for this machine's platform (the four platforms cost four
// builds; DIST_TARGETS narrows them) and checks what a release holds: the archive goreleaser
// would name, its checksum in the checksums file, the binary with LICENSE and README.md, and a
// binary that names its commit, version and build date.
func TestDist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kvcheck")
	}
	head, err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "scripts/dist.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "DIST_DIR="+out, "DIST_TARGETS="+runtime.GOOS+"/"+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dist.sh: %v\n%s", err, b)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	archive := regexp.MustCompile(`^kvcheck_(.+)_` + runtime.GOOS + `_` + runtime.GOARCH + `\.tar\.gz$`)
	i := slices.IndexFunc(names, archive.MatchString)
	if len(names) != 2 || i < 0 {
		t.Fatalf("dist wrote %v, want kvcheck_VERSION_%s_%s.tar.gz and its checksums file", names, runtime.GOOS, runtime.GOARCH)
	}
	name := names[i]
	version := archive.FindStringSubmatch(name)[1]
	sums, err := os.ReadFile(filepath.Join(out, "kvcheck_"+version+"_checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Errorf("checksums file %q, want %q", sums, want)
	}
	zr, err := gzip.NewReader(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var files []string
	bin := filepath.Join(t.TempDir(), "kvcheck")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, h.Name)
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want 0:0", h.Name, h.Uid, h.Gid)
		}
		if h.Name == "kvcheck" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bin, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := []string{"LICENSE", "README.md", "kvcheck"}; !slices.Equal(files, want) {
		t.Errorf("archive holds %v, want %v", files, want)
	}
	js, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version, Commit string
		BuildDate       string `json:"build_date"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Commit != strings.TrimSpace(string(head)) || doc.Version != version || doc.BuildDate == "" {
		t.Errorf("version -o json: %s; want commit %s, version %s and a build date", js, head, version)
	}
	if runtime.GOOS == "linux" {
		staticELF(t, bin)
	}
}

// staticELF fails unless the binary is linked statically (no program interpreter).
func staticELF(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: not static", path)
		}
	}
}

// TestDockerfileBuild runs the Dockerfile's build command on this machine (no Docker engine
// runs here) and checks the image is what the Dockerfile says: a build stage, a static binary,
// a non-root user.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kvcheck")
	}
	src, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var build string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build") {
			build = strings.TrimPrefix(l, "RUN ")
		}
	}
	if build == "" || !strings.Contains(string(src), "\nUSER 65532:65532\n") || !strings.Contains(string(src), " AS build\n") {
		t.Fatalf("Dockerfile: want a build stage with a RUN ... go build line and USER 65532:65532")
	}
	bin := filepath.Join(t.TempDir(), "kvcheck")
	build = strings.NewReplacer("${VERSION}", "v9.9.9", "${COMMIT}", "c0ffee", "${DATE}", "2026-12-01T00:00:00Z", "/out/kvcheck", bin).Replace(build)
	cmd := exec.Command("bash", "-c", build)
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, b)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "kvcheck version v9.9.9\n  commit:    c0ffee\n") {
		t.Errorf("version: %v\n%s", err, out)
	}
	if runtime.GOOS == "linux" {
		staticELF(t, bin)
	}
}
