package docs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
)

// readMarkdown parses text as a markdown file of its own.
func readMarkdown(t *testing.T, text string) ([]block, []string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, problems, err := readBlocks(dir, "x.md")
	if err != nil {
		t.Fatal(err)
	}
	return blocks, problems
}

const sample = "Text.\n\n" +
	"<!-- walkthrough: demo first -->\n" +
	"```sh\n" +
	"cat > /tmp/f <<'EOF'\n" +
	"# inside a here-document: not output\n" +
	"EOF\n" +
	"echo hello   # a note, not output\n" +
	"# hello\n" +
	"sh -c 'echo \"raftcron: no\" >&2; exit 1' \\\n" +
	"  --long\n" +
	"# raftcron: no\n" +
	"```\n\n" +
	"<!-- not run: needs a host named db -->\n" +
	"```sh\n" +
	"curl localhost:5432\n" +
	"```\n\n" +
	"```sh\n" +
	"curl 10.0.0.1:8001/status\n" +
	"```\n"

// A marked block yields its shown output and the commands that must fail;
// a block marked not to run and one that needs another host are left out.
func TestReadBlocks(t *testing.T) {
	t.Parallel()
	blocks, problems := readMarkdown(t, sample)
	if len(problems) > 0 || len(blocks) != 1 {
		t.Fatalf("blocks %+v, problems %q: want one block, no problem", blocks, problems)
	}
	b := blocks[0]
	if b.scenario != "demo" || b.step != "first" || b.line != 5 {
		t.Errorf("block %s %s at line %d, want demo first at 5", b.scenario, b.step, b.line)
	}
	if !slices.Equal(b.outputs, []string{"hello", "raftcron: no"}) {
		t.Errorf("outputs %q", b.outputs)
	}
	if !slices.Equal(b.failing, []int{5}) {
		t.Errorf("failing commands at %v, want the sh -c line, 5", b.failing)
	}
}

// Blocks that could run here but say nothing, and markers that mark
// nothing, are problems.
func TestReadBlocksProblems(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"```sh\ncurl 127.0.0.1:8001/readyz\n```\n":                  "x.md:1: this block runs on one machine but is not marked",
		"<!-- walkthrough: a b -->\n\n```sh\ntrue\n```\n":           "x.md:1: a marker belongs on the line right before",
		"<!-- walkthrough: A b -->\n```sh\ntrue\n```\n":             `x.md:1: "<!-- walkthrough: A b -->" is no marker`,
		"<!-- not run -->\n```sh\nbin/raftcron job list\n```\n":     `x.md:1: "<!-- not run -->" is no marker`,
		"<!-- walkthrough: a b -->\nText.\n```sh\ntrue\n```\n":      "x.md:1: a marker belongs on the line right before",
		"```bash\nbin/raftcron --addr localhost:7001 job list\n```": "x.md:1: this block runs on one machine",
	} {
		if _, problems := readMarkdown(t, text); len(problems) != 1 || !strings.HasPrefix(problems[0], want) {
			t.Errorf("%q: problems %q, want one starting %q", text, problems, want)
		}
	}
}

// The runner fails a step that silently does nothing, a command the text
// shows failing that succeeds, one that fails unannounced, output the text
// shows that is not printed, and a check's claim that does not hold.
func TestRunFailsWhatTheTextDoesNotDo(t *testing.T) {
	t.Parallel()
	testutil.NeedTool(t, "bash", "apt-get install bash")
	bin, err := filepath.Abs("design_test.go") // never run: the blocks call no binary
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		block  string
		checks map[string]check
		want   string // the problem
		says   string // the output's explanation, for a run that stopped
	}{
		"an empty variable": {block: "LEADER=$(echo)\nkill -9 $(cat /tmp/$LEADER.pid)",
			want: "bash: exit status 1", says: "x.md:4: exit status"},
		"a shown failure that succeeds": {block: "true\n# raftcron: refused",
			want: "bash: exit status 1", says: "x.md:3: succeeded; the text shows it fail"},
		"a failure not shown": {block: "false\necho after",
			want: "bash: exit status 1", says: "x.md:3: exit status 1"},
		"a failure with another status": {block: "sh -c 'exit 2'\n# raftcron: refused",
			want: "bash: exit status 1", says: "x.md:3: exit status 2, want 1"},
		"output not printed": {block: "echo something else\n# the shown output",
			want: `x.md:3 (step s): the output lacks "the shown output"`},
		"a check's claim": {block: "X=1", checks: map[string]check{"s": {after: `[ "$X" = 2 ] || __fail "X is $X"`}},
			want: "bash: exit status 1", says: "walkthrough: X is 1"},
	}
	for name, tc := range cases {
		blocks, problems := readMarkdown(t, "<!-- walkthrough: w s -->\n```sh\n"+tc.block+"\n```\n")
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		problems, out := run(t, bin, blocks, tc.checks)
		if len(problems) != 1 || !strings.Contains(problems[0], tc.want) || !strings.Contains(out, tc.says) {
			t.Errorf("%s: problems %q, want one containing %q and output saying %q; output:\n%s", name, problems, tc.want, tc.says, out)
		}
	}
	// And passes a block that does what it shows.
	blocks, _ := readMarkdown(t, "<!-- walkthrough: w s -->\n```sh\necho ok\n# ok\nsh -c 'echo raftcron: no >&2; exit 1'\n# raftcron: no\n```\n")
	if problems, out := run(t, bin, blocks, nil); len(problems) > 0 {
		t.Errorf("a block that does what it shows: %q\n%s", problems, out)
	}
}
