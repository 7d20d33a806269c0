package fence

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// snippet is a marked region of a tested file that docs copy: the lines between
// "[docs:NAME]" and "[/docs:NAME]", without their common indentation.
type snippet struct {
	file, name, lang string
	docs             []string // files that must show it as a code block
}

var snippets = []snippet{
	{"sqlfence/example_test.go", "go", "go", []string{"../docs/fencing.md"}},
	{"../clients/python/examples/billing.py", "python", "python",
		[]string{"../docs/fencing.md", "../clients/python/README.md"}},
	{"../clients/node/examples/billing.ts", "node", "ts",
		[]string{"../docs/fencing.md", "../clients/node/README.md"}},
	{"../clients/node/examples/worker.ts", "node-worker", "ts",
		[]string{"../README.md", "../clients/node/README.md"}},
	{"../clients/java/examples/dev/raftcron/examples/Billing.java", "java", "java",
		[]string{"../docs/fencing.md", "../clients/java/README.md"}},
	{"../clients/java/examples/dev/raftcron/examples/Charge.java", "java-worker", "java",
		[]string{"../README.md", "../clients/java/README.md"}},
}

func region(t *testing.T, s snippet) string {
	t.Helper()
	data, err := os.ReadFile(s.file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start, end := -1, -1
	for i, l := range lines {
		switch {
		case strings.Contains(l, "[docs:"+s.name+"]"):
			start = i + 1
		case strings.Contains(l, "[/docs:"+s.name+"]"):
			end = i
		}
	}
	if start < 0 || end < start {
		t.Fatalf("%s: no region [docs:%s] ... [/docs:%s]", s.file, s.name, s.name)
	}
	return dedent(lines[start:end])
}

// dedent removes the leading whitespace common to the non-blank lines.
func dedent(lines []string) string {
	indent, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			indent, first = lead, false
		}
		for !strings.HasPrefix(lead, indent) {
			indent = indent[:len(indent)-1]
		}
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(lines, "\n")
}

// TestDocsShowTheTestedSnippets checks that docs/fencing.md and the kits' READMEs show
// the examples their tests run, character for character, and the test vectors Go
// computes.
func TestDocsShowTheTestedSnippets(t *testing.T) {
	for _, s := range snippets {
		block := "```" + s.lang + "\n" + region(t, s) + "\n```"
		for _, doc := range s.docs {
			data, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte(block)) {
				t.Errorf("%s does not show the [docs:%s] region of %s; copy it:\n%s", doc, s.name, s.file, block)
			}
		}
	}
	doc, err := os.ReadFile("../docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	data, err := os.ReadFile(VectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	for _, sv := range v.Signatures {
		if sv.Name != "v2 genuine" && sv.Name != "exec v2 genuine" {
			continue
		}
		for _, want := range []string{"```\n" + sv.CanonicalV2 + "\n```", "`" + sv.Signature + "`"} {
			if !bytes.Contains(doc, []byte(want)) {
				t.Errorf("docs/fencing.md lacks the test vector %q: %s", sv.Name, want)
			}
		}
	}
}
