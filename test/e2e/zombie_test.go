//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
	"github.com/raftcron/raftcron/ops"
)

// Bounds of the zombie scenarios' waits: upper limits on a loaded machine.
const (
	zombieRowsTimeout   = 30 * time.Second // the first slots applied; a new leader's
	zombieHoldTimeout   = 10 * time.Second // the next request of an every-second job
	zombieAnswerTimeout = 30 * time.Second // the receiver's answer to the released request
)

// The zombie-writer proof, one per kit (docs/fencing.md, "The zombie-writer proof").
// E2E_ZOMBIE_UNFENCED=1 runs the receivers without their fence: every one of these
// tests must then fail.
func TestZombieGo(t *testing.T)     { testZombie(t, goReceiver) }
func TestZombiePython(t *testing.T) { testZombie(t, pythonReceiver) }
func TestZombieNode(t *testing.T)   { testZombie(t, nodeReceiver) }
func TestZombieJava(t *testing.T)   { testZombie(t, javaReceiver) }

func testZombie(t *testing.T, r *receiver) {
	z := runZombie(t, r, os.Getenv("E2E_ZOMBIE_UNFENCED") == "1")
	if z.answer.status != http.StatusConflict {
		t.Errorf("the paused leader's attempt (token %d) got %d %s, want 409: refused as stale by the database",
			z.token, z.answer.status, z.answer.body)
	}
	for _, v := range z.violations {
		t.Error(v)
	}
}

// TestControlZombieUnfenced: the Go receiver writes without its fence (UNFENCED=1); the
// paused leader's attempt must be applied and the checker must say so.
func TestControlZombieUnfenced(t *testing.T) {
	z := runZombie(t, goReceiver, true)
	if z.answer.status != http.StatusOK {
		t.Errorf("without the fence the paused leader's attempt got %d %s, want 200", z.answer.status, z.answer.body)
	}
	caught := false
	for _, v := range z.violations {
		caught = caught || strings.Contains(v, fmt.Sprintf("token %d of the paused leader's attempt applied", z.token))
	}
	if !caught {
		t.Errorf("the checker missed the unfenced write of token %d: %q", z.token, z.violations)
	}
}

// zombieOutcome is what a scenario saw.
type zombieOutcome struct {
	token      uint64     // of the paused leader's attempt
	answer     heldAnswer // the receiver's, to that attempt
	violations []string   // CheckSlots on the business table
}

// runZombie: a 3-node cluster signing its dispatches fires the job "slots" every second
// at the receiver, through a network that can hold a request. The network holds the
// leader's next attempt and the leader is SIGSTOPped; once a new leader's attempts
// (with larger tokens) are applied, the old leader is SIGCONTed and its attempt
// delivered. A forged dispatch with the largest token PostgreSQL holds is sent too.
// It fails the test for anything but the verdicts it returns.
func runZombie(t *testing.T, r *receiver, unfenced bool) zombieOutcome {
	began := time.Now()
	dir := t.TempDir()
	dsn := zombieDatabase(t)
	keyFile := filepath.Join(dir, "raftcron-fence.key")
	writeFenceKey(t, keyFile)
	env := []string{"DATABASE_URL=" + r.databaseURL(dsn), "FENCE_KEY_FILE=" + keyFile, "PORT=0"}
	if unfenced {
		env = append(env, "UNFENCED=1")
		t.Logf("the %s receiver runs without its fence (UNFENCED=1)", r.lang)
	}
	addr := r.start(t, dir, env...)
	late := newLateNetwork(t, addr)
	db, err := sql.Open("pgx", dsn.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })

	bin := plainBinary.get(t)
	c := clustertest.Start(t, localcluster.Options{Binary: bin, Dir: filepath.Join(dir, "cluster"),
		Args: append([]string{"--fence-key-file", keyFile}, raftFlags...)})
	applyJob(t, bin, c, fmt.Sprintf("name: slots\nschedule: \"@every 1s\"\nhttp: {url: %q}\n", late.url+"/slots"))
	waitSlots(t, db, "two slots applied", func(rows []SlotRow) bool { return len(rows) >= 2 })
	t.Logf("%s: cluster, receiver and the first slots in %s", r.lang, time.Since(began).Round(time.Millisecond))

	forged, status := forge(t, addr)
	if status != http.StatusUnauthorized {
		t.Errorf("a forged dispatch (token %d, signed with another key) got %d, want 401", forged, status)
	}

	old, held := holdLeadersAttempt(t, c, late)
	paused := time.Now()
	waitSlots(t, db, fmt.Sprintf("a new leader's attempt above token %d applied", held.token), func(rows []SlotRow) bool {
		return maxToken(rows) > held.token
	})
	t.Logf("%s leads; its attempts landed %s after the pause", clustertest.Leader(t, c).ID, time.Since(paused).Round(time.Millisecond))
	if err := c.Resume(old.ID); err != nil {
		t.Fatal(err)
	}
	close(held.release)
	z := zombieOutcome{token: held.token}
	select {
	case z.answer = <-held.answer:
	case <-time.After(zombieAnswerTimeout):
		t.Fatalf("no answer from the %s receiver to the released attempt within %s", r.lang, zombieAnswerTimeout)
	}
	t.Logf("%s: the paused leader's attempt (token %d) held %s, answered %d %s", r.lang, held.token,
		time.Since(paused).Round(time.Millisecond), z.answer.status, z.answer.body)

	rows := readSlots(t, db)
	z.violations = CheckSlots(rows, map[uint64]string{held.token: "the paused leader's attempt", forged: "the forgery"})
	if !unfenced {
		var highest uint64
		if err := db.QueryRow("SELECT token FROM raftcron_fences WHERE scope = 'slots'").Scan(&highest); err != nil {
			t.Fatal(err)
		}
		if highest == forged || highest < maxToken(rows) {
			t.Errorf("the fence's high-water mark is %d: want at least the highest token applied (%d), and not the forgery's (%d)",
				highest, maxToken(rows), forged)
		}
	}
	t.Logf("%s: slots applied (slot=token): %s; %s in all", r.lang, formatSlots(rows), time.Since(began).Round(time.Millisecond))
	return z
}

// applyJob applies a job file through the CLI.
func applyJob(t *testing.T, bin string, c *localcluster.Cluster, yaml string) {
	t.Helper()
	var addrs []string
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.Addr)
	}
	cmd := exec.Command(bin, "job", "apply", "-f", "-")
	cmd.Env = append(proc.Environ(), "RAFTCRON_ADDR="+strings.Join(addrs, ","))
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("job apply: %v\n%s", err, out)
	}
}

// holdLeadersAttempt makes the network hold the next request and SIGSTOPs the leader.
// The leader must still lead in the term it led in before, once the request is held, or
// another node could have sent it: then the request goes on and the test tries again.
func holdLeadersAttempt(t *testing.T, c *localcluster.Cluster, late *lateNetwork) (*localcluster.Node, *heldRequest) {
	t.Helper()
	const tries = 3
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	status := func(n *localcluster.Node) ops.Status {
		st, err := n.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for try := 1; ; try++ {
		leader := clustertest.Leader(t, c)
		before := status(leader)
		var held *heldRequest
		select {
		case held = <-late.holdNext():
		case <-time.After(zombieHoldTimeout):
			t.Fatalf("no request to hold within %s: does the job fire?", zombieHoldTimeout)
		}
		after := status(leader)
		if before.State == "leader" && after.State == "leader" && after.Term == before.Term {
			if err := c.Pause(leader.ID); err != nil {
				t.Fatal(err)
			}
			t.Logf("holding %s's attempt with token %d; %s SIGSTOPped", leader.ID, held.token, leader.ID)
			return leader, held
		}
		close(held.release)
		msg := fmt.Sprintf("%s was %s in term %d, then %s in term %d while token %d was held",
			leader.ID, before.State, before.Term, after.State, after.Term, held.token)
		if try == tries {
			t.Fatalf("inconclusive after %d tries: %s", tries, msg)
		}
		t.Logf("%s: trying again", msg)
	}
}

// forge sends the receiver a dispatch with the largest token a BIGINT holds, signed with
// a key of the forger's own, and returns the token and the answer's status.
func forge(t *testing.T, addr string) (uint64, int) {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	forger, err := fence.NewKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Second).Add(time.Hour) // a slot not applied yet
	run := fence.Run{Token: math.MaxInt64, Job: "slots", RunID: "forged", ScheduledAt: at, Attempt: 1,
		IdempotencyKey: "slots/" + fence.FormatScheduledAt(at)}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/slots", nil)
	if err != nil {
		t.Fatal(err)
	}
	run.SetHeader(req.Header)
	sig, err := forger.SignV2(fence.HTTPDispatch(run, req.Method, fence.SentURL(req), nil))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(fence.HeaderSignature, sig)
	resp, err := (&http.Client{Timeout: zombieAnswerTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return run.Token, resp.StatusCode
}

// waitSlots waits until the business table satisfies cond.
func waitSlots(t *testing.T, db *sql.DB, what string, cond func([]SlotRow) bool) {
	t.Helper()
	testutil.WaitFor(t, zombieRowsTimeout, what, func() bool { return cond(readSlots(t, db)) })
}

// readSlots reads the business table in the order it was written.
func readSlots(t *testing.T, db *sql.DB) []SlotRow {
	t.Helper()
	rs, err := db.Query("SELECT id, slot, token FROM slots ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var rows []SlotRow
	for rs.Next() {
		var r SlotRow
		if err := rs.Scan(&r.ID, &r.Slot, &r.Token); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// formatSlots shows rows as slot=token, the slot as its time of day.
func formatSlots(rows []SlotRow) string {
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteString(" ")
		}
		_, clock, _ := strings.Cut(r.Slot, "T")
		fmt.Fprintf(&b, "%s=%d", strings.TrimSuffix(clock, "Z"), r.Token)
	}
	return b.String()
}

func maxToken(rows []SlotRow) uint64 {
	var m uint64
	for _, r := range rows {
		m = max(m, r.Token)
	}
	return m
}
