package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/ops"
)

// devNode is one `raftcron serve` child of dev.
type devNode struct {
	id, addr, httpAddr, dataDir, logPath string
	// secureArgs are the node's TLS and ACL flags; empty with dev --insecure.
	secureArgs []string
	// opsRoots is the CA of the ops port's HTTPS; nil (dev --insecure):
	// plain HTTP.
	opsRoots *x509.CertPool

	// proc is set by start before it returns; read-only afterwards.
	proc *proc.Process
}

// newDevNodes names n nodes after the first 2n listeners: the gRPC ports,
// then the HTTP ports.
func newDevNodes(dir string, lns []net.Listener) []*devNode {
	n := len(lns) / 2
	nodes := make([]*devNode, n)
	for i := range nodes {
		id := fmt.Sprintf("n%d", i+1)
		nodes[i] = &devNode{
			id:       id,
			addr:     lns[i].Addr().String(),
			httpAddr: lns[n+i].Addr().String(),
			dataDir:  filepath.Join(dir, id),
			logPath:  logPathOf(dir, id),
		}
	}
	return nodes
}

func (n *devNode) args(peers string) []string {
	args := append([]string{"serve", "--id", n.id, "--data-dir", n.dataDir,
		"--addr", n.addr, "--http-addr", n.httpAddr, "--peers", peers}, devRaft...)
	return append(args, n.secureArgs...)
}

// start launches the node; exits receives it once it has exited.
func (n *devNode) start(bin, peers string, exits chan<- *devNode) error {
	cmd := exec.Command(bin, n.args(peers)...)
	cmd.Env = proc.Environ()
	p, err := proc.Start(cmd, n.logPath)
	if err != nil {
		return fmt.Errorf("%s: %w", n.id, err)
	}
	n.proc = p
	go func() {
		<-p.Done()
		exits <- n
	}()
	return nil
}

func (n *devNode) exited() bool { return n.proc.Exited() }

// lastLog is the last line of the node's log, to say why it stopped.
func (n *devNode) lastLog() string {
	f, err := os.Open(n.logPath)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			last = line
		}
	}
	if last == "" {
		return ""
	}
	const maxLen = 300
	if len(last) > maxLen {
		last = last[:maxLen] + "..."
	}
	return "; last log line: " + last
}

// signal sends sig to the node. Its error is ignored: a process already
// reaped is not signalled, and a survivor is what the bounded wait
// reports.
func (n *devNode) signal(sig os.Signal) { _ = n.proc.Signal(sig) }

// devHTTP asks the nodes' ops ports; loopback only, never through a proxy.
var devHTTP = &http.Client{
	Timeout:   time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// opsURL is path on the node's ops port, HTTPS under TLS.
func (n *devNode) opsURL(path string) string {
	if n.opsRoots != nil {
		return "https://" + n.httpAddr + path
	}
	return "http://" + n.httpAddr + path
}

// opsClient is devHTTP, trusting the demo's CA under TLS.
func (n *devNode) opsClient() *http.Client {
	if n.opsRoots == nil {
		return devHTTP
	}
	tr := devHTTP.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: n.opsRoots, MinVersion: tls.VersionTLS12}
	return &http.Client{Timeout: devHTTP.Timeout, Transport: tr}
}

func (n *devNode) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.opsURL(path), nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := n.opsClient().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

func (n *devNode) ready(ctx context.Context) bool {
	code, _, err := n.get(ctx, "/readyz")
	return err == nil && code == http.StatusOK
}

func (n *devNode) status(ctx context.Context) (ops.Status, error) {
	var st ops.Status
	code, body, err := n.get(ctx, "/status")
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("%s /status: HTTP %d", n.id, code)
	}
	return st, json.Unmarshal(body, &st)
}

// stopNodes asks every live node to stop gracefully, waits a bounded time
// (cut short by hurry), kills the stragglers and waits for them too.
func stopNodes(nodes []*devNode, hurry <-chan struct{}) error {
	for _, n := range nodes {
		if n.proc != nil && !n.exited() {
			n.signal(syscall.SIGTERM)
		}
	}
	waitNodes(nodes, devStopTimeout, hurry)
	for _, n := range nodes {
		if n.proc != nil && !n.exited() {
			n.signal(syscall.SIGKILL)
		}
	}
	waitNodes(nodes, devKillTimeout, nil)
	var errs []error
	for _, n := range nodes {
		if n.proc != nil && !n.exited() {
			errs = append(errs, fmt.Errorf("%s (pid %d) did not exit after SIGKILL", n.id, n.proc.Pid()))
		}
	}
	return errors.Join(errs...)
}

// waitNodes waits until every started node has exited, d has passed or
// hurry is closed.
func waitNodes(nodes []*devNode, d time.Duration, hurry <-chan struct{}) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for _, n := range nodes {
		if n.proc == nil {
			continue
		}
		select {
		case <-n.proc.Done():
		case <-timer.C:
			return
		case <-hurry:
			return
		}
	}
}
