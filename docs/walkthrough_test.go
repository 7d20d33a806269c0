package docs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// walkthroughTimeout bounds one scenario's run: the cluster walkthrough
// starts its nodes twice, waits out an election and two graceful stops.
const walkthroughTimeout = 100 * time.Second

// checks are what the text claims of its steps, by scenario and step (see
// blocks_test.go); every step they name must exist. The blocks' own
// spelling is theirs: 127.0.0.1:800N, /tmp/..., $CERTS.
var checks = map[string]map[string]check{
	"cluster": {
		"certs": {after: `
for f in ca ca-key node-n1 node-n1-key node-n2 node-n2-key node-n3 node-n3-key client-alice client-alice-key; do
  [ -s $CERTS/$f.pem ] || __fail "tls: $f.pem was not written"
done`},
		"start": {after: `
for i in 1 2 3; do kill -0 $(cat /tmp/raftcron-demo/n$i.pid) || __fail "n$i does not run"; done`},
		"client": {after: `
[ -n "$RAFTCRON_TOKEN" ] || __fail "acl bootstrap printed no secret"`},
		// The refusals and the bad file changed nothing: the file applies
		// unchanged at the version the resume left.
		"refusals":  {after: unchangedAtVersion3},
		"bad-input": {after: unchangedAtVersion3},
		"json-api": {after: `
bin/raftcron job get nightly-billing -o yaml | grep -q "0 3 \* \* \*" || __fail "the PUT did not change the schedule"
bin/raftcron run list --job nightly-billing | grep -q manual || __fail "the trigger made no manual run"`},
		// The node killed was the leader, and is gone; another leads, and
		// shows the dead one unreachable.
		"failover": {
			before: `
__led=$(__leader)
[ -n "$__led" ] || __fail "no node leads before the failover"`,
			after: `
[ "$LEADER" = "$__led" ] || __fail "the text killed LEADER=$LEADER, but $__led led"
! kill -0 $(cat /tmp/raftcron-demo/$LEADER.pid) 2> /dev/null || __fail "$LEADER still runs after kill -9"
bin/raftcron cluster status -o json | grep -A1 '"leader": {' | grep -q "\"id\": \"$LEADER\"" && __fail "cluster status names the killed $LEADER as leader"
__new=$(__leader)
[ -n "$__new" ] && [ "$__new" != "$LEADER" ] || __fail "no new leader after killing $LEADER (found '$__new')"
for __try in $(seq 50); do
  curl -sf --cacert $CERTS/ca.pem https://127.0.0.1:800${__new#n}/status | grep -A4 "\"id\": \"$LEADER\"" | grep -q '"contact": "unreachable"' && break
  [ $__try = 50 ] && __fail "the new leader $__new does not show $LEADER unreachable"
  sleep 0.2
done`},
		"restart": {after: `
for i in 1 2 3; do kill -0 $(cat /tmp/raftcron-demo/n$i.pid) || __fail "n$i does not run after the restart"; done`},
		"stop": {
			before: `__pids=$(cat /tmp/raftcron-demo/n*.pid)`,
			after: `
for __p in $__pids; do kill -0 $__p 2> /dev/null && __fail "pid $__p still runs"; done
[ ! -e /tmp/raftcron-demo ] || __fail "/tmp/raftcron-demo is still there"`},
	},
	"plaintext": {
		"cluster": {after: `
[ ! -e /tmp/raftcron-plain ] || __fail "/tmp/raftcron-plain is still there"`},
	},
	// The measurement kills the leader dev announced, and dev elects
	// another.
	"dev-timings": {
		"measure": {after: `
grep -q ' exited: signal: killed; it was the leader' /tmp/dev.out || __fail "dev reported no killed leader"
[ "$(grep -c 'leader is now' /tmp/dev.out)" -ge 2 ] || __fail "dev announced no second leader"`},
	},
	// Each host's directory holds what the table sends to it and nothing
	// more; its settings are serve's flags, where the unit reads them.
	"three-hosts": {
		"files": {after: `
__help=$(bin/raftcron serve --help)
for i in 1 2 3; do
  [ "$(ls hosts/n$i | tr '\n' ' ')" = "ca.pem node-n$i-key.pem node-n$i.pem raftcron raftcron.env raftcron.service " ] ||
    __fail "hosts/n$i holds $(ls hosts/n$i | tr '\n' ' ')"
  grep -q "^RAFTCRON_ID=n$i$" hosts/n$i/raftcron.env || __fail "hosts/n$i/raftcron.env is not n$i's"
  for __v in $(cut -d= -f1 hosts/n$i/raftcron.env); do
    __flag=--$(echo ${__v#RAFTCRON_} | tr A-Z_ a-z-)
    grep -q -- "$__flag " <<< "$__help" || __fail "$__v in raftcron.env: serve has no flag $__flag"
  done
  for __f in $(sed -n 's|^RAFTCRON_TLS_[A-Z]*=/etc/raftcron/||p' hosts/n$i/raftcron.env); do
    [ -e hosts/n$i/$__f ] || __fail "raftcron.env of n$i names /etc/raftcron/$__f, which hosts/n$i lacks"
  done
done
grep -qx "EnvironmentFile=/etc/raftcron/raftcron.env" hosts/n1/raftcron.service || __fail "the unit reads no /etc/raftcron/raftcron.env"`},
	},
}

// unchangedAtVersion3 checks that the job is as the walkthrough's file and
// its pause and resume left it.
const unchangedAtVersion3 = `
[ "$(bin/raftcron job apply -f /tmp/nightly.yaml)" = "job nightly-billing unchanged (version 3)" ] || __fail "the job changed"`

// helpers are bash functions the checks use.
const helpers = `__leader() {
  local i
  for i in 1 2 3 4 5; do
    [ -e /tmp/raftcron-demo/n$i.pid ] && kill -0 $(cat /tmp/raftcron-demo/n$i.pid) 2> /dev/null || continue
    curl -sf --cacert $CERTS/ca.pem https://127.0.0.1:800$i/status | grep -q '"state": "leader"' && { echo n$i; return; }
  done
  return 0
}
`

// TestWalkthroughs runs every marked command block of README.md and
// docs/*.md, scenario by scenario, against the real binary (see
// blocks_test.go for the marks and what is checked).
func TestWalkthroughs(t *testing.T) {
	testutil.NeedTool(t, "bash", "apt-get install bash")
	testutil.NeedTool(t, "curl", "apt-get install curl")
	scenarios := readScenarios(t)
	for name, steps := range checks {
		for step := range steps {
			if !slices.ContainsFunc(scenarios[name], func(b block) bool { return b.step == step }) {
				t.Errorf("the checks of step %s %s: no such marked block", name, step)
			}
		}
	}
	bin := testutil.Binary(t)
	for name, blocks := range scenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, bin, blocks, checks[name])
		})
	}
}

// readScenarios reads the marked blocks of the documentation, by scenario.
func readScenarios(t *testing.T) map[string][]block {
	t.Helper()
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	for i, f := range files {
		files[i] = "docs/" + f
	}
	scenarios := map[string][]block{}
	for _, name := range append([]string{"README.md"}, files...) {
		blocks, problems, err := readBlocks("..", name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		for _, b := range blocks {
			if slices.ContainsFunc(scenarios[b.scenario], func(o block) bool { return o.step == b.step }) {
				t.Errorf("%s:%d: a second step %s in scenario %s", b.file, b.line, b.step, b.scenario)
			}
			scenarios[b.scenario] = append(scenarios[b.scenario], b)
		}
	}
	if len(scenarios["cluster"]) == 0 {
		t.Fatal("no marked block of the README's walkthrough found")
	}
	return scenarios
}

// linkRepository makes the repository's files (deploy/, examples/, ...)
// appear in work as in the repository root, where the blocks run: the
// blocks read them and write files of their own beside them.
func linkRepository(t *testing.T, work string) {
	t.Helper()
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); name != "bin" && !strings.HasPrefix(name, ".") {
			abs, err := filepath.Abs(filepath.Join("..", name))
			if err == nil {
				err = os.Symlink(abs, filepath.Join(work, name))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runScenario runs blocks and fails the test with every problem found.
func runScenario(t *testing.T, bin string, blocks []block, checks map[string]check) {
	began := time.Now()
	problems, out := run(t, bin, blocks, checks)
	t.Logf("ran in %s", time.Since(began).Round(100*time.Millisecond))
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Logf("the output:\n%s", out)
	}
}

// run runs blocks as one bash script in a directory where bin/raftcron is
// bin and the repository's files are at hand, with /tmp/ and the ports
// rewritten (localPorts). It returns what went wrong, if anything, and the
// output.
func run(t *testing.T, bin string, blocks []block, checks map[string]check) ([]string, string) {
	t.Helper()
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "raftcron")); err != nil {
		t.Fatal(err)
	}
	linkRepository(t, work)
	tmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	local := localPorts(t, tmp)
	path := filepath.Join(work, "walkthrough.sh")
	if err := os.WriteFile(path, []byte(script(blocks, checks, helpers, local)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", path)
	cmd.Dir = work
	// The binary's default --addr, moved as the blocks' ports are.
	// dev's data dir goes to the scenario's /tmp.
	cmd.Env = append(proc.Environ(), "RAFTCRON_ADDR="+local("127.0.0.1:7001"), "TMPDIR="+tmp)
	transcript := filepath.Join(work, "transcript")
	p, err := proc.Start(cmd, transcript)
	if err != nil {
		t.Fatal(err)
	}
	// The nodes the blocks start in the background share bash's process
	// group: whatever the blocks leave running dies with the test.
	t.Cleanup(func() { _ = syscall.Kill(-p.Pid(), syscall.SIGKILL) })
	exited := p.Wait(walkthroughTimeout)
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	data, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	out := string(data)
	switch {
	case !exited:
		return []string{fmt.Sprintf("not done within %s", walkthroughTimeout)}, out
	case p.ExitCode() != 0 || !strings.Contains(out, doneMark):
		return []string{"bash: " + p.ExitReason()}, out
	}
	return wantOutputs(blocks, splitSteps(out), local), out
}
