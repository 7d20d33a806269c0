//go:build image

package deploy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

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
	waitFor(t, 60*time.Second, "the cluster to accept a job", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: spec})
		return err == nil
	})
	waitFor(t, 30*time.Second, "three fenced deliveries", func() bool { return hits.Load() >= 3 })
}
