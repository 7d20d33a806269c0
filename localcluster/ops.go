package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/raftcron/raftcron/ops"
)

// opsTimeout bounds one request to a node's ops port: a node that does not
// answer within it counts as not ready.
const opsTimeout = 2 * time.Second

// newOpsClient reaches the nodes' ops ports through the network, never
// through a proxy, trusting roots (the cluster's CA) when they serve HTTPS.
func newOpsClient(nw Network, roots *x509.CertPool) *http.Client {
	tr := &http.Transport{Proxy: nil, DialContext: nw.Dial}
	if roots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Timeout: opsTimeout, Transport: tr}
}

// OpsURL is path on the node's ops port: HTTPS under TLS.
func (n *Node) OpsURL(path string) string {
	if n.c.roots != nil {
		return "https://" + n.HTTPAddr + path
	}
	return "http://" + n.HTTPAddr + path
}

// Get asks the node's ops port for path and returns the status code and
// the body (at most 1 MiB).
func (n *Node) Get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.OpsURL(path), nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := n.c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// Ready reports whether the node answers /readyz with 200.
func (n *Node) Ready(ctx context.Context) bool {
	code, _, err := n.Get(ctx, "/readyz")
	return err == nil && code == http.StatusOK
}

// Status reads the node's /status.
func (n *Node) Status(ctx context.Context) (ops.Status, error) {
	var st ops.Status
	code, body, err := n.Get(ctx, "/status")
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("%s /status: HTTP %d", n.ID, code)
	}
	return st, json.Unmarshal(body, &st)
}

// WaitReady waits until the node answers /readyz with 200, or ctx ends. A
// node whose process exits meanwhile is an error naming how it ended and
// the last line of its log.
func (n *Node) WaitReady(ctx context.Context) error {
	return poll(ctx, n.ID+" ready", func() (bool, error) {
		if n.State() == Down {
			return false, n.exitError("exited while starting")
		}
		return n.Ready(ctx), nil
	})
}

// exitError says that the node's process ended, how, and what it said last.
func (n *Node) exitError(what string) error {
	err := fmt.Errorf("%s %s", n.ID, what)
	if p := n.Process(); p != nil && p.Exited() {
		err = fmt.Errorf("%s %s: %s", n.ID, what, p.ExitReason())
	}
	if last := n.LastLog(); last != "" {
		err = fmt.Errorf("%w; last log line: %s", err, last)
	}
	return err
}

// pollEvery is how often the cluster's waits check again.
const pollEvery = 20 * time.Millisecond

// poll checks cond every pollEvery until it holds, fails or ctx ends.
func poll(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(pollEvery):
		}
	}
}

// OpsClient reaches the nodes' ops ports as the cluster does: through its
// network, trusting its CA when they serve HTTPS (OpsURL says which).
func (c *Cluster) OpsClient() *http.Client { return c.http }
