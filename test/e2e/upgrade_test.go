//go:build e2e

package e2e

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// previousRelease is the release this build upgrades from (DESIGN §16):
// command version 2, before the secret store.
const previousRelease = "ed252bd"

// previousVersion is the command version previousRelease applies: the
// cluster stays at it until every node runs this build.
const previousVersion = 2

// releaseBinary builds previousRelease's raftcron from the repository's
// history, once per commit: bin/raftcron-<commit> is reused by later runs.
var releaseBinary struct {
	once sync.Once
	path string
	skip string // why the test cannot run here
	err  error
}

func previousBinary(t *testing.T) string {
	t.Helper()
	releaseBinary.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			releaseBinary.err = err
			return
		}
		out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", previousRelease+"^{commit}").Output()
		if err != nil {
			releaseBinary.skip = fmt.Sprintf("release %s is not in this clone's git history (a shallow clone? fetch it with "+
				"'git fetch --unshallow'): the upgrade test builds it", previousRelease)
			return
		}
		commit := strings.TrimSpace(string(out))
		releaseBinary.path = filepath.Join(root, "bin", "raftcron-"+commit)
		if _, err := os.Stat(releaseBinary.path); err == nil {
			return
		}
		releaseBinary.err = buildRelease(root, commit, releaseBinary.path)
	})
	switch {
	case releaseBinary.skip != "":
		testutil.SkipOrFail(t, "%s", releaseBinary.skip)
	case releaseBinary.err != nil:
		t.Fatalf("build release %s: %v", previousRelease, releaseBinary.err)
	}
	return releaseBinary.path
}

// buildRelease exports commit's tree (git archive: nothing is checked out
// or registered in the repository, so an interrupted run leaves no stale
// worktree behind) and builds its binary as `make build` does.
func buildRelease(root, commit, dst string) error {
	src, err := os.MkdirTemp("", "raftcron-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	tarball, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Start(); err != nil {
		return err
	}
	untarErr := untar(tarball, src)
	if err := archive.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %v: %s", commit, err, stderr.String())
	}
	if untarErr != nil {
		return untarErr
	}
	start := time.Now()
	tmp := dst + ".tmp"
	build := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", tmp, "./cmd/node")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	fmt.Printf("e2e: built release %s as %s in %s\n", previousRelease, dst, time.Since(start).Round(time.Millisecond))
	return os.Rename(tmp, dst) // whole or not at all, for runs that come later
}

// untar writes the regular files, directories and symlinks of a git
// archive under dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, path)
		case tar.TypeReg:
			err = writeFile(path, tr, os.FileMode(h.Mode).Perm())
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestUpgrade3 upgrades a live 3-node cluster of the previous release to
// this build, followers first and the leader last, each by a graceful stop
// and a start of the new binary on the same data (with the secrets key the
// release did not know), while the stable jobs fire and clients churn the
// registry. The checker must find no lost or doubled slot and no token
// going back; a command of version 3 (secret put) must be refused, naming
// the nodes still to upgrade, until the last node runs this build, and then
// work; and the cluster version must reach this build's once every node
// runs it.
func TestUpgrade3(t *testing.T) {
	old := previousBinary(t)
	s := newScenario(t, "upgrade3", scenarioOptions{nodes: 3, bin: old, expect: Expect{LeaderChanges: 1}})
	s.run(4 * time.Second)

	leader := s.c.leader()
	var oldNodes []*node
	for _, n := range s.c.nodes {
		if n != leader {
			oldNodes = append(oldNodes, n)
		}
	}
	oldNodes = append(oldNodes, leader) // followers first, the leader last
	var upgraded []*node
	for i, n := range oldNodes {
		s.upgrade(n)
		upgraded = append(upgraded, n)
		s.run(3 * time.Second)
		if i < len(oldNodes)-1 {
			s.wantNewCommandRefused(upgraded[0], oldNodes[i+1:])
			s.wantClusterVersion(upgraded, previousVersion)
		}
	}

	s.waitClusterVersion(fsm.CommandVersion)
	s.retry("secret put once every node runs this build", func(ctx context.Context, n *node) error {
		_, err := pb.NewSecretServiceClient(s.c.client(n)).PutSecret(ctx, upgradeSecret)
		return err
	})
	s.c.event("new-command-works", nil, "secret put committed")
	s.run(3 * time.Second)
	s.finish("")
}

// upgrade stops n gracefully (a leader hands over first) and starts this
// build on its data.
func (s *scenario) upgrade(n *node) {
	s.t.Helper()
	if err := n.Stop(exitTimeout); err != nil {
		s.t.Fatal(err)
	}
	s.c.event("stop", []*node{n}, "SIGTERM, to upgrade")
	n.SetBinary(plainBinary.get(s.t))
	s.c.restart(n)
	s.c.event("upgraded", []*node{n}, "started this build on its data")
	s.c.waitReady(n)
	s.c.leader()
}

// upgradeSecret is the command of version 3 the upgrade proposes.
var upgradeSecret = &pb.PutSecretRequest{Name: "upgrade", Value: []byte("put once every node runs this build")}

// wantNewCommandRefused checks that a command of version 3, sent to a node
// of this build, is refused with FailedPrecondition naming every node
// that still runs the previous release.
func (s *scenario) wantNewCommandRefused(via *node, behind []*node) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := pb.NewSecretServiceClient(s.c.client(via)).PutSecret(ctx, upgradeSecret)
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition {
		s.t.Fatalf("secret put through %s with %d nodes on release %s: %v, want FailedPrecondition",
			via.ID, len(behind), previousRelease, err)
	}
	// A node of the old release answers that it applies version 2; under
	// load it may not answer in time, which names it unreachable.
	old := fmt.Sprintf(" (applies version %d)", previousVersion)
	for _, n := range s.c.nodes {
		named := strings.Contains(st.Message(), n.ID+old) || strings.Contains(st.Message(), n.ID+" (unreachable)")
		if old := slices.Contains(behind, n); named != old {
			s.t.Errorf("refusal %q: names %s %v, want %v (still on release %s: %v)", st.Message(), n.ID, named, old, previousRelease, old)
		}
	}
	s.c.event("new-command-refused", []*node{via}, st.Message())
}

// wantClusterVersion checks the cluster version that nodes of this build
// report now.
func (s *scenario) wantClusterVersion(nodes []*node, want uint32) {
	s.t.Helper()
	for _, n := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := s.c.polls.status(ctx, n)
		cancel()
		if err != nil {
			s.t.Fatalf("/status of %s: %v", n.ID, err)
		}
		if st.ClusterVersion != want {
			s.t.Errorf("%s reports cluster_version %d while a node runs release %s, want %d", n.ID, st.ClusterVersion, previousRelease, want)
		}
	}
}

// waitClusterVersion waits until every node reports the cluster version.
func (s *scenario) waitClusterVersion(want uint32) { s.c.waitClusterVersion(want) }

// waitClusterVersion waits until every node reports the cluster version.
func (c *cluster) waitClusterVersion(want uint32) {
	c.t.Helper()
	testutil.WaitFor(c.t, 30*time.Second, fmt.Sprintf("cluster_version %d on every node", want), func() bool {
		for _, n := range c.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := c.polls.status(ctx, n)
			cancel()
			if err != nil || st.ClusterVersion != want {
				return false
			}
		}
		return true
	})
	c.event("cluster-version", c.nodes, fmt.Sprintf("raised to %d", want))
}
