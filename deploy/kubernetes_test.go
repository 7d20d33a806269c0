package deploy

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/raftcron/raftcron/internal/testutil"
)

// decodeStrict decodes every document of a multi-document YAML stream into
// the Kubernetes type its kind names; an unknown field, kind or a typo in a
// field name fails, as `kubectl apply --validate=strict` would.
func decodeStrict(t *testing.T, name string, data []byte) []any {
	t.Helper()
	var objs []any
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s document %d: %v", name, i, err)
		}
		var obj any
		switch meta.Kind {
		case "StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "Service":
			obj = &corev1.Service{}
		case "PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		default:
			t.Fatalf("%s document %d: unexpected kind %q", name, i, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s document %d (%s): %v", name, i, meta.Kind, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

func TestKubernetesManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes: %v", err)
	}
	var objs []any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decodeStrict(t, f, data)...)
	}
	checkCluster(t, objs)
}

// checkCluster asserts what makes the objects a working raftcron cluster,
// beyond being well-formed: three stable identities, probes on the ops
// port, a volume per pod, a PDB that keeps a quorum, and a headless Service
// that publishes pods before they are ready (they become ready only once a
// leader exists).
func checkCluster(t *testing.T, objs []any) {
	t.Helper()
	var sts *appsv1.StatefulSet
	var pdb *policyv1.PodDisruptionBudget
	var headless, client *corev1.Service
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.StatefulSet:
			sts = v
		case *policyv1.PodDisruptionBudget:
			pdb = v
		case *corev1.Service:
			if v.Spec.ClusterIP == corev1.ClusterIPNone {
				headless = v
			} else {
				client = v
			}
		}
	}
	if sts == nil || pdb == nil || headless == nil {
		t.Fatalf("want a StatefulSet, a PodDisruptionBudget and a headless Service; got %d objects", len(objs))
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Errorf("StatefulSet replicas = %v, want 3", sts.Spec.Replicas)
	}
	if sts.Spec.ServiceName != headless.Name {
		t.Errorf("StatefulSet serviceName %q is not the headless Service %q", sts.Spec.ServiceName, headless.Name)
	}
	if !headless.Spec.PublishNotReadyAddresses {
		t.Error("headless Service must publish not-ready addresses: nodes are not ready before they elect a leader")
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable = %v, want 1", pdb.Spec.MaxUnavailable)
	}
	if len(sts.Spec.VolumeClaimTemplates) == 0 {
		t.Error("StatefulSet has no volumeClaimTemplates: a node's Raft log would not survive a reschedule")
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe = %+v, want GET /readyz", c.ReadinessProbe)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/livez" {
		t.Errorf("liveness probe = %+v, want GET /livez", c.LivenessProbe)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		t.Error("container has no preStop hook")
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["RAFTCRON_ID"] != "$(POD_NAME)" {
		t.Errorf("RAFTCRON_ID = %q, want the pod name", env["RAFTCRON_ID"])
	}
	for i := 0; i < 3; i++ {
		if want := fmt.Sprintf("-%d=", i); !strings.Contains(env["RAFTCRON_PEERS"], want) {
			t.Errorf("RAFTCRON_PEERS %q lacks pod %d", env["RAFTCRON_PEERS"], i)
		}
	}
	for _, k := range []string{"RAFTCRON_TLS_CERT", "RAFTCRON_TLS_KEY", "RAFTCRON_TLS_CA", "RAFTCRON_ACL"} {
		if env[k] == "" {
			t.Errorf("%s is not set: off loopback a node refuses to start without TLS and ACLs", k)
		}
	}
	checkProbesPlain(t, c, env["RAFTCRON_HEALTH_ADDR"])
	// The JSON API and the UI answer 421 to a name they are not given.
	if client == nil || !strings.Contains(","+env["RAFTCRON_HTTP_HOST"], ","+client.Name+".") {
		t.Errorf("RAFTCRON_HTTP_HOST %q does not name the client Service: the JSON API and the UI would answer it 421", env["RAFTCRON_HTTP_HOST"])
	}
}

// checkProbesPlain: with TLS the ops port is HTTPS, which the kubelet's
// HTTP probes cannot ask; they must reach the plain --health-addr port.
func checkProbesPlain(t *testing.T, c corev1.Container, healthAddr string) {
	t.Helper()
	_, port, err := net.SplitHostPort(healthAddr)
	if err != nil {
		t.Errorf("RAFTCRON_HEALTH_ADDR %q is not HOST:PORT: the probes need the plain-HTTP probe port", healthAddr)
		return
	}
	var named string
	for _, p := range c.Ports {
		if strconv.Itoa(int(p.ContainerPort)) == port {
			named = p.Name
		}
	}
	for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil {
			continue // checked above
		}
		if got := p.HTTPGet.Port.String(); named == "" || (got != named && got != port) {
			t.Errorf("%s probe on port %q, want the --health-addr port %s (%q)", what, got, port, named)
		}
		if p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP {
			t.Errorf("%s probe scheme %s, want HTTP on the probe port", what, p.HTTPGet.Scheme)
		}
	}
}

func TestHelmChartLintsAndRendersACluster(t *testing.T) {
	helm := tool(t, "helm", "run `make helm-tool` to install it")
	chart := filepath.Join("helm", "raftcron")
	if out, err := exec.Command(helm, "lint", "--strict", chart).CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	out, err := exec.Command(helm, "template", "rc", chart, "--namespace", "sched").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	checkCluster(t, decodeStrict(t, "helm template", out))
	if !bytes.Contains(out, []byte("rc-1=rc-1.rc.sched.svc.cluster.local:7001")) {
		t.Errorf("rendered peers do not name pod rc-1 under the headless Service:\n%s", out)
	}
	bad := exec.Command(helm, "template", "rc", chart, "--set", "replicas=2")
	if out, err := bad.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("replicas must be")) {
		t.Errorf("helm template with replicas=2 = %v, %s; want a refusal naming replicas", err, out)
	}
}

// tool finds a binary in the repo's bin/tools or on PATH, or skips the test
// with a message saying how to get it.
func tool(t *testing.T, name, how string) string {
	t.Helper()
	if p, err := filepath.Abs(filepath.Join("..", "bin", "tools", name)); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		testutil.SkipOrFail(t, "%s not found (in bin/tools or PATH): %s", name, how)
	}
	return p
}
