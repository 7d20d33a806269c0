package devcluster

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/cli"
	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// Deadlines of the dev tests: upper bounds for a loaded box, not waits.
const (
	devFirstRunsTimeout = 45 * time.Second // ready nodes, the job applied, 3 runs
	devFailoverTimeout  = 30 * time.Second // a new leader and 2 more runs
	devExitTimeout      = 30 * time.Second
)

// The lines of dev that the tests read.
var (
	devDataDirLine = regexp.MustCompile(`^data dir\s+(\S+)`)
	devAttemptLine = regexp.MustCompile(`^\S+ job=demo slot=(\S+) token=(\d+) attempt=(\d+) node=(n\d) (\w+)`)
	devLeaderLine  = regexp.MustCompile(`leader is now (n\d) \(pid (\d+)\); kill the leader: kill -9 (\d+)$`)
	devExitLine    = regexp.MustCompile(`^\S+ (n\d) \(pid (\d+)\) exited: (.*)$`)
	devUILine      = regexp.MustCompile(`^(?:web UI)?\s+(n\d)\s+(https://127\.0\.0\.1:\d+/ui/)$`)
	devNodeLine    = regexp.MustCompile(`^(n\d)\s+pid \d+\s+grpc (\S+)\s+http (\S+)`)
	devDownLine    = regexp.MustCompile(`^downstream (http://127\.0\.0\.1:\d+/) `)
)

func TestDevRefusesBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"--nodes", "4"}, "--nodes"},
		{[]string{"--nodes", "1"}, "--nodes"},
		{[]string{"--nodes", "0"}, "--nodes"},
		{[]string{"--nodes", "-3"}, "--nodes"},
		{[]string{"--nodes", "three"}, "--nodes"},
		{[]string{"--base-port", "-1"}, "--base-port"},
		{[]string{"--base-port", "65530"}, "--base-port"},
		{[]string{"--nodes", "5", "--base-port", "65526"}, "--base-port"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // where a data dir would appear
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"dev"}, tc.args...), strings.NewReader(""), &stdout, &stderr)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, cli.ExitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.flag) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr %q: want one line naming %s", stderr.String(), tc.flag)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q: want nothing", stdout.String())
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
				t.Errorf("a refused dev left %v in TMPDIR", entries)
			}
		})
	}
}

func TestDevValidateAcceptsThreeAndFiveNodes(t *testing.T) {
	for _, o := range []devOptions{{nodes: 3}, {nodes: 5}, {nodes: 3, basePort: 7001}, {nodes: 5, basePort: 65535 - 10}} {
		if err := o.validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestDevSmoke is the first minute of a user: runs arrive with rising
// tokens, signed v2 (the downstream refuses a forged one), the leader killed
// by the PID dev printed is replaced and runs go on, and Ctrl-C leaves no
// process and no data behind.
func TestDevSmoke(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	dev := startDev(t)

	var downstream string
	dev.expect(t, devFirstRunsTimeout, "the downstream's URL", func(line string) bool {
		if m := devDownLine.FindStringSubmatch(line); m != nil {
			downstream = m[1]
		}
		return downstream != ""
	})

	// Every node's web UI is printed, and answers.
	grpcAddrs, httpURLs := map[string]string{}, map[string]string{}
	uiURLs := map[string]string{}
	dev.expect(t, devFirstRunsTimeout, "the web UI's URL of every node", func(line string) bool {
		if m := devNodeLine.FindStringSubmatch(line); m != nil {
			grpcAddrs[m[1]], httpURLs[m[1]] = m[2], m[3]
		}
		if m := devUILine.FindStringSubmatch(line); m != nil {
			uiURLs[m[1]] = m[2]
		}
		return len(uiURLs) == 3
	})
	for id, uiURL := range uiURLs {
		if uiURL != httpURLs[id]+"/ui/" {
			t.Errorf("web UI of %s at %s, but its HTTP port at %s", id, uiURL, httpURLs[id])
		}
		// It is HTTPS with the node's certificate: only the demo's CA opens it.
		if resp, err := devCAClient(t, dev.exports(t)).Get(uiURL); err != nil || resp.StatusCode != http.StatusOK || resp.TLS == nil {
			t.Errorf("GET %s (printed by dev) trusting the demo's CA: %v %v", uiURL, resp, err)
		} else {
			_ = resp.Body.Close()
		}
		if resp, err := http.Get(uiURL); err == nil {
			_ = resp.Body.Close()
			t.Errorf("GET %s without the demo's CA: %d, want a certificate error", uiURL, resp.StatusCode)
		}
	}

	// Runs arrive with rising tokens, every one signed v2 by the nodes: the
	// downstream takes nothing else.
	var tokens []uint64
	dev.expect(t, devFirstRunsTimeout, "3 applied runs with rising tokens", func(line string) bool {
		if a, ok := parseAttempt(line); ok {
			if a.outcome != "applied" {
				t.Fatalf("outcome %q before any failure: %s", a.outcome, line)
			}
			if len(tokens) > 0 && a.token <= tokens[len(tokens)-1] {
				t.Fatalf("token %d after %d: %s", a.token, tokens[len(tokens)-1], line)
			}
			tokens = append(tokens, a.token)
		}
		return len(tokens) >= 3
	})
	forgeDelivery(t, downstream+"run")
	dev.expect(t, devFirstRunsTimeout, "the forged delivery refused", func(line string) bool {
		a, ok := parseAttempt(line)
		return ok && a.token == forgedToken && a.outcome == "unverified"
	})
	// The printed exports reach the cluster over TLS with the management
	// token dev bootstrapped; without the token no write gets in, without
	// TLS nothing does.
	env := dev.exports(t)
	want := []string{"RAFTCRON_ADDR", "RAFTCRON_CA_CERT", "RAFTCRON_CLIENT_CERT", "RAFTCRON_CLIENT_KEY", "RAFTCRON_TOKEN"}
	if got := envNames(env); !slices.Equal(got, want) {
		t.Fatalf("exports %v: want %v", got, want)
	}
	if addr := strings.TrimPrefix(env[0], "RAFTCRON_ADDR="); addr != grpcAddrs["n1"]+","+grpcAddrs["n2"]+","+grpcAddrs["n3"] {
		t.Fatalf("RAFTCRON_ADDR=%s, want every node's gRPC address %v", addr, grpcAddrs)
	}
	expectOK(t, runCLIEnv(t, env, "", "job", "get", "demo"))
	expectOK(t, runCLIEnv(t, env, "", "acl", "token", "list")) // the management role
	expectFailure(t, runCLIEnv(t, env[:len(env)-1], "", "job", "pause", "demo"), "not authenticated")
	expectFailure(t, runCLIEnv(t, env[:1], "", "job", "get", "demo"), "closed the connection")

	leaderID, leaderPID := dev.leader(t)
	checkChildOf(t, leaderPID, dev.cmd.Process.Pid)
	if err := syscall.Kill(leaderPID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", leaderPID, err)
	}

	// dev reports the death, a new leader takes over and runs go on.
	highest := tokens[len(tokens)-1]
	var reported bool
	var newLeader string
	var after []uint64
	dev.expect(t, devFailoverTimeout, "the leader's exit and 2 runs with larger tokens", func(line string) bool {
		if m := devExitLine.FindStringSubmatch(line); m != nil {
			if m[1] != leaderID || m[2] != strconv.Itoa(leaderPID) || m[3] != "signal: killed; it was the leader: the others elect a new one" {
				t.Fatalf("unexpected exit line (killed %s pid %d): %s", leaderID, leaderPID, line)
			}
			reported = true
		}
		if m := devLeaderLine.FindStringSubmatch(line); m != nil {
			newLeader = m[1]
		}
		if a, ok := parseAttempt(line); ok && a.token > highest {
			if a.outcome != "applied" && a.outcome != "duplicate" {
				t.Fatalf("outcome %q after the failover: %s", a.outcome, line)
			}
			after = append(after, a.token)
		}
		return reported && newLeader != "" && len(after) >= 2
	})
	if newLeader == leaderID {
		t.Errorf("the killed leader %s was announced again", leaderID)
	}
	// The second terminal's exports outlive any node, the first they name
	// included: put the dead leader first.
	addrs := []string{grpcAddrs[leaderID]}
	for _, id := range []string{"n1", "n2", "n3"} {
		if id != leaderID {
			addrs = append(addrs, grpcAddrs[id])
		}
	}
	deadFirst := append([]string{"RAFTCRON_ADDR=" + strings.Join(addrs, ",")}, env[1:]...)
	expectOK(t, runCLIEnv(t, deadFirst, "", "job", "pause", "demo"))

	// Ctrl-C stops everything and removes the data.
	if err := dev.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := dev.wait(t, devExitTimeout); code != 0 {
		t.Fatalf("dev exited %d after SIGINT; stderr %q", code, dev.stderr())
	}
	if pids := processesMentioning(dev.dataDir); len(pids) > 0 {
		t.Errorf("processes left running after Ctrl-C: %v", pids)
	}
	if _, err := os.Stat(dev.dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data dir %s still there after Ctrl-C (stat: %v)", dev.dataDir, err)
	}
}

// TestDevInsecure: --insecure is today's plaintext demo, without ACLs: the
// one export line is all a second terminal needs, for reads and writes.
func TestDevInsecure(t *testing.T) {
	dev := startDev(t, "--insecure")
	dev.expect(t, devFirstRunsTimeout, "an applied run", func(line string) bool {
		a, ok := parseAttempt(line)
		return ok && a.outcome == "applied"
	})
	env := dev.exports(t)
	if got := envNames(env); !slices.Equal(got, []string{"RAFTCRON_ADDR"}) {
		t.Fatalf("exports %v: want RAFTCRON_ADDR only", got)
	}
	expectOK(t, runCLIEnv(t, env, "", "job", "pause", "demo"))
	if err := dev.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := dev.wait(t, devExitTimeout); code != 0 {
		t.Fatalf("dev exited %d after SIGTERM; stderr %q", code, dev.stderr())
	}
}

// TestDevKilledLeavesNoNode: `kill -9` of dev itself takes its nodes along
// (Pdeathsig), although it had no chance to stop them.
func TestDevKilledLeavesNoNode(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only; reads /proc")
	}
	dev := startDev(t)
	dev.leader(t)
	if pids := processesMentioning(dev.dataDir); len(pids) == 0 {
		t.Fatal("no node process found in /proc: the check below would prove nothing")
	}
	if err := dev.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	dev.wait(t, devExitTimeout)
	testutil.WaitFor(t, exitTimeout, "no node left after kill -9 of dev", func() bool {
		return len(processesMentioning(dev.dataDir)) == 0
	})
}

// devRun is one `raftcron dev` process with its stdout read line by line.
type devRun struct {
	cmd     *exec.Cmd
	lines   chan string   // stdout, closed at EOF
	done    chan struct{} // closed once the process has exited
	dataDir string

	mu       sync.Mutex // guards the fields below
	seen     []string   // every stdout line read so far
	errBuf   bytes.Buffer
	leaderID string
	pid      int // of the last leader announced
}

// startDev starts `raftcron dev` with TMPDIR in a test dir and waits for the
// data dir line. Cleanup kills dev (Pdeathsig takes its nodes along), then
// whatever still runs on the data dir, and logs the output if the test failed.
func startDev(t *testing.T, args ...string) *devRun {
	t.Helper()
	tmp := t.TempDir()
	d := &devRun{lines: make(chan string, 256), done: make(chan struct{})}
	d.cmd = exec.Command(testutil.Binary(t), append([]string{"dev"}, args...)...)
	d.cmd.Env = append(proc.Environ(), "TMPDIR="+tmp)
	d.cmd.Stderr = &lockedWriter{mu: &d.mu, w: &d.errBuf}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go d.read(stdout)
	go func() {
		_ = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
		for _, pid := range processesMentioning(tmp) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			d.mu.Lock()
			t.Logf("---- dev stdout ----\n%s\n---- dev stderr ----\n%s", strings.Join(d.seen, "\n"), d.errBuf.String())
			d.mu.Unlock()
		}
	})
	d.expect(t, clustertest.CLITimeout, "the data dir line", func(line string) bool {
		if m := devDataDirLine.FindStringSubmatch(line); m != nil {
			d.dataDir = m[1]
		}
		return d.dataDir != ""
	})
	if !strings.HasPrefix(d.dataDir, tmp) {
		t.Fatalf("data dir %s is not in TMPDIR %s", d.dataDir, tmp)
	}
	return d
}

func (d *devRun) read(stdout interface{ Read([]byte) (int, error) }) {
	defer close(d.lines)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		d.mu.Lock()
		d.seen = append(d.seen, line)
		if m := devLeaderLine.FindStringSubmatch(line); m != nil {
			d.leaderID = m[1]
			d.pid, _ = strconv.Atoi(m[2])
		}
		d.mu.Unlock()
		d.lines <- line
	}
}

// expect reads lines until match says it has seen enough; the output ending
// or the deadline passing fails the test.
func (d *devRun) expect(t *testing.T, timeout time.Duration, what string, match func(line string) bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case line, ok := <-d.lines:
			if !ok {
				t.Fatalf("dev's output ended while waiting for %s; stderr %q", what, d.stderr())
			}
			if match(line) {
				return
			}
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// leader is the last leader dev announced.
func (d *devRun) leader(t *testing.T) (id string, pid int) {
	t.Helper()
	d.mu.Lock()
	id, pid = d.leaderID, d.pid
	d.mu.Unlock()
	if pid != 0 {
		return id, pid
	}
	d.expect(t, devFirstRunsTimeout, "a leader line", func(line string) bool {
		return devLeaderLine.MatchString(line)
	})
	return d.leader(t)
}

// exports are the KEY=VALUE pairs of the export lines dev printed.
// devCAClient trusts the CA that dev's exports name (RAFTCRON_CA_CERT).
func devCAClient(t *testing.T, env []string) *http.Client {
	t.Helper()
	for _, kv := range env {
		if file, ok := strings.CutPrefix(kv, cli.EnvName("ca-cert")+"="); ok {
			pem, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(pem)
			return &http.Client{Timeout: clustertest.CLITimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
		}
	}
	t.Fatalf("no %s in dev's exports %v", cli.EnvName("ca-cert"), env)
	return nil
}

func (d *devRun) exports(t *testing.T) []string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var env []string
	for _, line := range d.seen {
		if kv, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(v, "'") { // shellQuote's quoting, undone
				v = strings.ReplaceAll(strings.Trim(v, "'"), `'\''`, "'")
			}
			env = append(env, k+"="+v)
		}
	}
	return env
}

// envNames are the names of KEY=VALUE pairs, in order.
func envNames(env []string) []string {
	names := make([]string, len(env))
	for i, kv := range env {
		names[i], _, _ = strings.Cut(kv, "=")
	}
	return names
}

// wait waits for dev to exit and returns its status (-1: killed).
func (d *devRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(timeout):
		t.Fatalf("dev did not exit within %s", timeout)
	}
	return d.cmd.ProcessState.ExitCode()
}

func (d *devRun) stderr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.errBuf.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

type devAttempt struct {
	token   uint64
	outcome string
}

func parseAttempt(line string) (devAttempt, bool) {
	m := devAttemptLine.FindStringSubmatch(line)
	if m == nil {
		return devAttempt{}, false
	}
	token, err := strconv.ParseUint(m[2], 10, 64)
	if err != nil {
		return devAttempt{}, false
	}
	return devAttempt{token: token, outcome: m[5]}, true
}

// checkChildOf makes sure pid is a child of parent before the test kills it.
func checkChildOf(t *testing.T, pid, parent int) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("leader pid %d: %v", pid, err)
	}
	// pid (comm) state ppid ...; comm may hold spaces, so read after the last ')'.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
		t.Fatalf("pid %d printed as the leader is not a child of dev (pid %d): stat %q", pid, parent, stat)
	}
}

// processesMentioning lists the processes whose command line contains s.
func processesMentioning(s string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// forgedToken is the token of forgeDelivery: below any the demo reaches in
// the test, so that it raises nothing even if it got in.
const forgedToken = 1

// forgeDelivery sends the downstream a run of the demo job as anyone who can
// reach it could, without the nodes' key: it must answer 401.
func forgeDelivery(t *testing.T, url string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Second)
	fence.Run{Token: forgedToken, Job: "demo", RunID: "demo-forged", Attempt: 1, ScheduledAt: at,
		IdempotencyKey: fence.SlotKey("demo", at)}.SetHeader(req.Header)
	req.Header.Set(fence.HeaderSignature, "v2=forged")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged delivery: HTTP %d, want 401", resp.StatusCode)
	}
}
