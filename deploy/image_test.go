//go:build image

package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestImageClusterFiresAJob runs three containers of the release image
// (`make image`) on host networking, on 127.0.0.1 ports: they must elect a
// leader and fire a job at a webhook served by this test.
func TestImageClusterFiresAJob(t *testing.T) {
	image := os.Getenv("RAFTCRON_IMAGE")
	if image == "" {
		t.Skip("RAFTCRON_IMAGE is not set: run `make image-test`")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon reachable (docker info: %v): start dockerd as root to run this test\n%s", err, out)
	}
	var hits atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Raftcron-Fencing-Token") != "" {
			hits.Add(1)
		}
	}))
	defer sink.Close()

	ports := freePorts(t, 6)
	var peers []string
	for i := 0; i < 3; i++ {
		peers = append(peers, fmt.Sprintf("c%d=127.0.0.1:%d", i+1, ports[i]))
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("raftcron-image-test-c%d-%d", i+1, os.Getpid())
		args := []string{"run", "-d", "--rm", "--name", name, "--network", "host",
			"-e", fmt.Sprintf("RAFTCRON_ID=c%d", i+1),
			"-e", fmt.Sprintf("RAFTCRON_ADDR=127.0.0.1:%d", ports[i]),
			"-e", fmt.Sprintf("RAFTCRON_HTTP_ADDR=127.0.0.1:%d", ports[3+i]),
			"-e", "RAFTCRON_PEERS=" + strings.Join(peers, ","),
			image}
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("docker run: %v\n%s", err, out)
		}
		t.Cleanup(func() {
			if t.Failed() {
				logs, _ := exec.Command("docker", "logs", name).CombinedOutput()
				t.Logf("%s log:\n%s", name, logs)
			}
			_ = exec.Command("docker", "rm", "-f", name).Run()
		})
	}

	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ports[0]), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	jobs := pb.NewJobServiceClient(conn)
	spec := &pb.JobSpec{Name: "image-test", Schedule: "* * * * * *", Http: &pb.HttpTarget{Url: sink.URL}}
	testutil.WaitFor(t, 60*time.Second, "the cluster to accept a job", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: spec})
		return err == nil
	})
	testutil.WaitFor(t, 30*time.Second, "three fenced deliveries", func() bool { return hits.Load() >= 3 })
}

// TestImageComposeClusterFiresAJob brings up deploy/compose.yaml as its
// header says (TLS material from `raftcron tls`, ACLs on), bootstraps a
// token and fires a job at a webhook served by this test. The file uses
// fixed ports 7001-7003 and 8001-8003 on 127.0.0.1.
func TestImageComposeClusterFiresAJob(t *testing.T) {
	if os.Getenv("RAFTCRON_IMAGE") == "" {
		t.Skip("RAFTCRON_IMAGE is not set: run `make image-test`")
	}
	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Skip("docker-compose not found: install Debian's docker-compose to run this test")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon reachable (docker info: %v)\n%s", err, out)
	}
	bin, err := filepath.Abs(filepath.Join("..", "bin", "raftcron"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca, tlsDir := filepath.Join(dir, "ca"), filepath.Join(dir, "tls")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("raftcron %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("tls", "ca", "create", "--dir", ca)
	for _, n := range []string{"n1", "n2", "n3"} {
		run("tls", "cert", "create", "--dir", tlsDir, "--ca", filepath.Join(ca, "ca.pem"),
			"--ca-key", filepath.Join(ca, "ca-key.pem"), "--node", n, "--addr", "127.0.0.1,localhost")
	}
	run("tls", "cert", "create", "--dir", ca, "--client", "test")
	data, err := os.ReadFile(filepath.Join(ca, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tlsDir, "ca.pem"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := filepath.Walk(tlsDir, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o755) }); err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("raftcron-compose-test-%d", os.Getpid())
	up := exec.Command(compose, "-f", file, "-p", project, "up", "-d")
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command(compose, "-f", file, "-p", project, "logs", "--no-color").CombinedOutput()
			t.Logf("compose logs:\n%s", logs)
		}
		_ = exec.Command(compose, "-f", file, "-p", project, "down", "-v", "--timeout", "10").Run()
	})

	var hits atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Raftcron-Fencing-Token") != "" {
			hits.Add(1)
		}
	}))
	defer sink.Close()
	client := []string{"--addr", "127.0.0.1:7001", "--ca-cert", filepath.Join(ca, "ca.pem"),
		"--client-cert", filepath.Join(ca, "client-test.pem"), "--client-key", filepath.Join(ca, "client-test-key.pem")}
	var secret string
	testutil.WaitFor(t, 60*time.Second, "acl bootstrap on the compose cluster", func() bool {
		out, err := exec.Command(bin, append([]string{"acl", "bootstrap", "-o", "json"}, client...)...).Output()
		if err != nil {
			return false
		}
		var tok struct {
			Secret string `json:"secret"`
		}
		if json.Unmarshal(out, &tok) != nil || tok.Secret == "" {
			return false
		}
		secret = tok.Secret
		return true
	})
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte(fmt.Sprintf("name: compose-test\nschedule: \"* * * * * *\"\nhttp: {url: %q}\n", sink.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(append([]string{"job", "apply", "-f", job, "--token", secret}, client...)...)
	testutil.WaitFor(t, 30*time.Second, "three fenced deliveries", func() bool { return hits.Load() >= 3 })
}
