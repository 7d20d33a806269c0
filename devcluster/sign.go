package devcluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/localcluster"
)

// fenceKeyFile is the demo's signing key in its data dir: the nodes sign every
// delivery with it (--fence-key-file) and the downstream verifies them.
const fenceKeyFile = "fence.key"

// devSigningPoll is how often dev asks whether the nodes sign v2 yet.
const devSigningPoll = 100 * time.Millisecond

// makeFenceKey writes a fresh key into dir and returns the file and the
// downstream's verifier: v2 signatures of the demo job only.
func makeFenceKey(dir string) (string, *fence.Verifier, error) {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	line := base64.StdEncoding.EncodeToString(secret)
	path := filepath.Join(dir, fenceKeyFile)
	if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
		return "", nil, fmt.Errorf("demo fence key: %w", err)
	}
	keys, err := fence.ParseKeys([]byte(line))
	if err != nil {
		return "", nil, err
	}
	return path, fence.NewVerifier(keys, fence.WithJobs(devJobName)), nil
}

// waitSigningV2 waits until the leader applies the cluster version of its
// own release: then every node signs v2, which the downstream alone
// accepts. A new cluster's leader raises it right after its election.
func (d *demo) waitSigningV2(ctx context.Context) error {
	waitCtx, cancel := context.WithTimeout(ctx, devReadyTimeout)
	defer cancel()
	tick := time.NewTicker(devSigningPoll)
	defer tick.Stop()
	for {
		if signsV2(waitCtx, d.cluster) {
			return nil
		}
		select {
		case <-tick.C:
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return nil // interrupted: stop quietly
			}
			return fmt.Errorf("the nodes did not raise the cluster version within %s (--keep keeps their logs)", devReadyTimeout)
		}
	}
}

// signsV2 reports whether the leader runs the cluster version of its build.
func signsV2(ctx context.Context, c *localcluster.Cluster) bool {
	leader := c.CurrentLeader(ctx)
	if leader == nil {
		return false
	}
	st, err := leader.Status(ctx)
	return err == nil && st.ClusterVersion >= st.CommandVersion
}
