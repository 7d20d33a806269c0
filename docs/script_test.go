package docs

import (
	"fmt"
	"math/rand/v2"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// check is bash that runs right before or after a step of a scenario, to
// test what the text says the step does; __fail MESSAGE fails the run.
type check struct{ before, after string }

// stepMark separates the steps' output in the transcript.
const stepMark = "@@walkthrough-step "

// doneMark ends the transcript of a run that went through.
const doneMark = "@@walkthrough-done"

// script is the bash of a scenario: its blocks and checks, rewritten by
// local, under a prelude that fails the run at the first command that
// fails unless the text shows it fail (then it must exit 1, and does),
// and the functions of the checks (helpers).
func script(blocks []block, checks map[string]check, helpers string, local func(string) string) string {
	head := prelude + local(helpers)
	var body strings.Builder
	where := map[int]string{}             // script line → where it comes from
	line := strings.Count(head, "\n") + 3 // after the head and the two lines about the failing commands
	var mustFail []string
	emit := func(text, from string, fromLine int) {
		for i, l := range strings.Split(text, "\n") {
			body.WriteString(l + "\n")
			if fromLine > 0 {
				where[line] = fmt.Sprintf("%s:%d", from, fromLine+i)
			} else {
				where[line] = from
			}
			line++
		}
	}
	for _, b := range blocks {
		c := checks[b.step]
		emit(fmt.Sprintf("printf '\\n%s%s\\n'", stepMark, b.step), "the walkthrough test", 0)
		if c.before != "" {
			emit(local(strings.TrimSpace(c.before)), "the check before step "+b.step, 0)
		}
		first := line
		emit(local(strings.Join(b.lines, "\n")), b.file, b.line)
		for _, i := range b.failing {
			mustFail = append(mustFail, fmt.Sprint(first+i))
		}
		if c.after != "" {
			emit(local(strings.TrimSpace(c.after)), "the check after step "+b.step, 0)
		}
	}
	var s strings.Builder
	s.WriteString(head)
	fmt.Fprintf(&s, "__must_fail=' %s '\n", strings.Join(mustFail, " "))
	s.WriteString("declare -A __where=(")
	for l, w := range where {
		fmt.Fprintf(&s, "[%d]=%q ", l, w)
	}
	s.WriteString(")\n")
	s.WriteString(body.String())
	s.WriteString(epilogue)
	return s.String()
}

// prelude: no -e, so that a command the text shows failing can fail; the
// ERR trap (inherited by functions and subshells, -E) ends the run at any
// other failure, naming the line of the document.
const prelude = `set -uo pipefail
set -E
__fail() { printf '\nwalkthrough: %s\n' "$*" >&2; exit 1; }
__failed=' '
trap '__rc=$?; case "$__must_fail" in *" $LINENO "*) [ "$__rc" = 1 ] || __fail "${__where[$LINENO]}: exit status $__rc, want 1"; __failed="$__failed$LINENO ";; *) __fail "${__where[$LINENO]:-line $LINENO of the script}: exit status $__rc";; esac' ERR
make() { [ "$*" = build ] || __fail "make $*: the test stubs make build alone (the binary is built)"; }
`

const epilogue = `for __l in $__must_fail; do
  case "$__failed" in *" $__l "*) ;; *) __fail "${__where[$__l]}: succeeded; the text shows it fail";; esac
done
printf '\n` + doneMark + `\n'
`

// localPorts is the rewriting of a scenario's blocks onto this machine:
// 127.0.0.1:700N and :800N (N a digit) onto free ports, 127.0.0.1:9000 (a
// webhook target nothing answers) onto a free one, /tmp/ into dir.
func localPorts(t *testing.T, dir string) func(string) string {
	t.Helper()
	grpc, http := freeDecade(t), freeDecade(t)
	ports := regexp.MustCompile(`(127\.0\.0\.1|localhost):(700|800|9000\b)`)
	return func(s string) string {
		s = ports.ReplaceAllStringFunc(s, func(m string) string {
			host, port, _ := strings.Cut(m, ":")
			switch port {
			case "700":
				return fmt.Sprintf("%s:%d", host, grpc)
			case "800":
				return fmt.Sprintf("%s:%d", host, http)
			}
			return fmt.Sprintf("%s:%d", host, 10*grpc+9)
		})
		return strings.ReplaceAll(s, "/tmp/", dir+"/")
	}
}

// decades are the port decades this test run has handed out.
var decades = struct {
	sync.Mutex
	taken map[int]bool
}{taken: map[int]bool{}}

// freeDecade picks d such that ports 10d .. 10d+9 are free on 127.0.0.1,
// below the kernel's ephemeral range, and not handed out before: the
// blocks write a node's port as 700$N, so d replaces 700.
func freeDecade(t *testing.T) int {
	t.Helper()
	decades.Lock()
	defer decades.Unlock()
	for range 100 {
		d := 2000 + rand.IntN(1200) // ports 20000..31999
		if decades.taken[d] {
			continue
		}
		free := true
		for p := 10 * d; p < 10*d+10 && free; p++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				free = false
				continue
			}
			_ = ln.Close()
		}
		if free {
			decades.taken[d] = true
			return d
		}
	}
	t.Fatal("no 10 consecutive free ports found in 100 tries")
	return 0
}

// wantOutputs checks that the transcript of each step holds the lines its
// block shows, in order; "…" matches anything.
func wantOutputs(blocks []block, steps map[string]string, local func(string) string) []string {
	var problems []string
	for _, b := range blocks {
		out := steps[b.step]
		for _, want := range b.outputs {
			parts := strings.Split(local(want), "…")
			for i, p := range parts {
				parts[i] = regexp.QuoteMeta(p)
			}
			re := regexp.MustCompile(strings.Join(parts, ".*"))
			loc := re.FindStringIndex(out)
			if loc == nil {
				problems = append(problems, fmt.Sprintf("%s:%d (step %s): the output lacks %q", b.file, b.line, b.step, want))
				continue
			}
			out = out[loc[1]:]
		}
	}
	return problems
}

// splitSteps cuts a transcript at the step marks.
func splitSteps(transcript string) map[string]string {
	steps := map[string]string{}
	for _, part := range strings.Split(transcript, stepMark)[1:] {
		name, out, _ := strings.Cut(part, "\n")
		steps[name] += out
	}
	return steps
}
