package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The command blocks of the documentation that a reader runs as written.
//
// A ```sh block of README.md or docs/*.md that a reader is meant to run
// verbatim on one machine is marked by an HTML comment, which renders as
// nothing, on the line before its fence:
//
//	<!-- walkthrough: SCENARIO STEP -->
//
// TestWalkthroughs runs the blocks of each scenario in the order of the
// documents (README.md, then docs/*.md by name) in one bash, and checks
// what the text says happens:
//
//   - A comment line right after a command is what the command prints:
//     the step's output must contain it ("…" matches anything). A command
//     whose shown output starts with "raftcron: " is one that fails: it
//     must exit 1. Every other command must succeed. A comment at the end
//     of a command line explains it and is not checked.
//   - The checks of walkthrough_test.go run before and after the steps
//     that the text makes claims about (the killed node was the leader, a
//     new one was elected, the job survived the restart).
//
// The blocks run in a directory where bin/raftcron is the binary under
// test and the repository's files are at hand, on free ports and in a
// temporary directory: 127.0.0.1:700N, :800N and :9000 and /tmp/ are
// rewritten (localPorts), and RAFTCRON_ADDR is the rewritten default.
//
// A block that could run on one machine (it names 127.0.0.1 or localhost)
// and is not marked says why it is not run: <!-- not run: WHY -->.

// block is one marked ```sh block.
type block struct {
	file     string // relative to the repository root
	line     int    // of the block's first line
	scenario string
	step     string
	lines    []string
	// outputs are the lines the block shows its commands print, in order.
	outputs []string
	// failing are the indexes in lines of the commands that must exit 1.
	failing []int
}

var (
	walkthroughMarker = regexp.MustCompile(`^<!-- walkthrough: ([a-z0-9-]+) ([a-z0-9-]+) -->$`)
	notRunMarker      = regexp.MustCompile(`^<!-- not run: .+ -->$`)
	anyMarker         = regexp.MustCompile(`^<!-- (walkthrough|not run)\b`)
	shellFence        = regexp.MustCompile("^```(sh|bash|shell|console)\\b")
	heredoc           = regexp.MustCompile(`<<-?\s*'?"?([A-Za-z_]+)"?'?`)
)

// notRun is the scenario of a block marked not to run.
const notRun = "-"

// readBlocks returns the marked blocks of the markdown file at root/name,
// and a line for each marking mistake and each block left unmarked that
// could run on one machine.
func readBlocks(root, name string) ([]block, []string, error) {
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		return nil, nil, err
	}
	var (
		blocks   []block
		problems []string
		marker   string // the marker on the line before, if any
		open     *block // the shell block being read, if any
		indent   string // of its fence
	)
	for i, line := range strings.Split(string(data), "\n") {
		n, trimmed := i+1, strings.TrimSpace(line)
		switch {
		case open != nil && trimmed == "```":
			switch open.scenario {
			case notRun:
			case "":
				if p := unmarkedProblem(open); p != "" {
					problems = append(problems, p)
				}
			default:
				open.readOutputs()
				blocks = append(blocks, *open)
			}
			open = nil
		case open != nil:
			open.lines = append(open.lines, strings.TrimPrefix(line, indent))
		case anyMarker.MatchString(trimmed):
			if !walkthroughMarker.MatchString(trimmed) && !notRunMarker.MatchString(trimmed) {
				problems = append(problems, fmt.Sprintf("%s:%d: %q is no marker: <!-- walkthrough: SCENARIO STEP --> "+
					"or <!-- not run: WHY -->", name, n, trimmed))
			}
			marker = trimmed
			continue
		case shellFence.MatchString(trimmed):
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
			open = &block{file: name, line: n + 1}
			if m := walkthroughMarker.FindStringSubmatch(marker); m != nil {
				open.scenario, open.step = m[1], m[2]
			} else if marker != "" {
				open.scenario = notRun
			}
		case marker != "":
			problems = append(problems, fmt.Sprintf("%s:%d: a marker belongs on the line right before a ```sh fence", name, n-1))
		}
		marker = ""
	}
	return blocks, problems, nil
}

// unmarkedProblem is the problem of an unmarked shell block, if any: one
// that could run on one machine must say whether it is run.
func unmarkedProblem(b *block) string {
	text := strings.Join(b.lines, "\n")
	if !strings.Contains(text, "127.0.0.1") && !strings.Contains(text, "localhost") {
		return ""
	}
	return fmt.Sprintf("%s:%d: this block runs on one machine but is not marked: "+
		"<!-- walkthrough: SCENARIO STEP --> runs it in the tests, <!-- not run: WHY --> says why not", b.file, b.line-1)
}

// readOutputs finds the commands' shown output: whole-line comments after
// a command, outside here-documents.
func (b *block) readOutputs() {
	command := -1 // the line of the last command's start
	continued := false
	var doc string // the here-document being read, if any
	for i, line := range b.lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case doc != "":
			if trimmed == doc {
				doc = ""
			}
			continue
		case strings.HasPrefix(trimmed, "# ") && command >= 0 && !continued:
			out := strings.TrimPrefix(trimmed, "# ")
			b.outputs = append(b.outputs, out)
			if strings.HasPrefix(out, "raftcron: ") && (len(b.failing) == 0 || b.failing[len(b.failing)-1] != command) {
				b.failing = append(b.failing, command)
			}
			continue
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		}
		if !continued {
			command = i
		}
		continued = strings.HasSuffix(line, `\`)
		if m := heredoc.FindStringSubmatch(line); m != nil {
			doc = m[1]
		}
	}
}
