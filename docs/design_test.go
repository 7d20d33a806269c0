// Package docs holds the checks of the documentation: the design document's
// package table matches the code, and the command blocks of README.md and
// docs/ run as written (blocks_test.go).
package docs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/raftcron/raftcron"

// tableHeader opens the package table of design.md §2.
const tableHeader = "| package | owns | may import | must not |"

// row is one line of the table: the packages it is about and the raftcron
// packages they may import (nil with any: `*`).
type row struct {
	line     int
	packages []string
	imports  []string
	any      bool
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readTable parses the package table of path.
func readTable(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == tableHeader:
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
			if len(cells) != 4 {
				t.Fatalf("%s:%d: %d cells, want 4 (package, owns, may import, must not)", path, n, len(cells))
			}
			if strings.Contains(cells[0], "(not Go)") {
				continue // a directory of other languages' code
			}
			r := row{line: n, packages: names(cells[0])}
			for _, name := range names(cells[2]) {
				if name == "*" {
					r.any = true
				} else {
					r.imports = append(r.imports, name)
				}
			}
			rows = append(rows, r)
		case in:
			return rows
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no line %q", path, tableHeader)
	}
	return rows
}

// names are the backticked words of a cell, `proto` spelt out.
func names(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		name := m[1]
		if name == "proto" {
			name = "proto/raftcron/v1"
		}
		out = append(out, name)
	}
	return out
}

// imports lists every package of the module (the end-to-end suite's
// included) and the module's packages its own code imports, tests aside.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "hashicorpmetrics,e2e",
		"-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module+"/")
		pkgs[pkg] = []string{}
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				pkgs[pkg] = append(pkgs[pkg], rel)
			}
		}
	}
	return pkgs
}

// problems compares the table with the packages and their imports.
func problems(rows []row, pkgs map[string][]string) []string {
	var out []string
	rowOf := map[string]row{}
	for _, r := range rows {
		for _, p := range append(slices.Clone(r.packages), r.imports...) {
			if _, ok := pkgs[p]; !ok {
				out = append(out, fmt.Sprintf("design.md:%d: `%s` is no package of the module", r.line, p))
			}
		}
		for _, p := range r.packages {
			if other, dup := rowOf[p]; dup {
				out = append(out, fmt.Sprintf("design.md:%d: `%s` has a row already (line %d)", r.line, p, other.line))
			}
			rowOf[p] = r
		}
	}
	for p, imps := range pkgs {
		r, ok := rowOf[p]
		if !ok {
			out = append(out, fmt.Sprintf("package %s has no row in design.md §2: say what it owns and what it may import", p))
			continue
		}
		for _, imp := range imps {
			if !r.any && !slices.Contains(r.imports, imp) {
				out = append(out, fmt.Sprintf("%s imports %s, which its row (design.md:%d) does not allow: add it there or drop the import", p, imp, r.line))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestPackageTableMatchesTheCode: every package of the module has one row
// of design.md §2, every row names packages that exist, and no package
// imports a raftcron package its row leaves out.
func TestPackageTableMatchesTheCode(t *testing.T) {
	t.Parallel()
	for _, p := range problems(readTable(t, "design.md"), imports(t)) {
		t.Error(p)
	}
}

// TestPackageTableCheckFindsEachProblem runs the check on a table and a
// module made up for it.
func TestPackageTableCheckFindsEachProblem(t *testing.T) {
	t.Parallel()
	doc := t.TempDir() + "/design.md"
	table := tableHeader + "\n|---|---|---|---|\n" +
		"| `fence` | the library | stdlib | |\n" +
		"| `ledger` | the demo | `proto`, `gone` | |\n" +
		"| `fence`, `cmd/node` | again | `*` | |\n" +
		"| `clients/` (not Go) | kits | | |\n\nafter the table\n"
	if err := os.WriteFile(doc, []byte(table), 0o600); err != nil {
		t.Fatal(err)
	}
	pkgs := map[string][]string{
		"fence": {}, "ledger": {"fence"}, "cmd/node": {"ledger", "fence"}, "proto/raftcron/v1": {}, "worker": {},
	}
	got := problems(readTable(t, doc), pkgs)
	want := []string{
		"design.md:4: `gone` is no package of the module",
		"design.md:5: `fence` has a row already (line 3)",
		"ledger imports fence, which its row (design.md:4) does not allow: add it there or drop the import",
		"package proto/raftcron/v1 has no row in design.md §2: say what it owns and what it may import",
		"package worker has no row in design.md §2: say what it owns and what it may import",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
