package dispatch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"

	"github.com/raftcron/raftcron/internal/proc"
)

// receiverEnv makes the test binary act as a webhook receiver in a process
// of its own, so that the wave benchmark can tell the client's CPU from the
// receiver's.
const receiverEnv = "RAFTCRON_DISPATCH_TEST_RECEIVER"

// runReceiver serves webhooks on loopback over HTTP/1.1 and h2c until its
// stdin closes. It prints its address, then answers every request 200 with
// no body, as a webhook receiver usually does. POST /slot?at=NS sets the
// slot of the next wave (Unix ns; both processes read one clock), so that
// the requests themselves carry nothing but what the executor sends. GET
// /stats returns, since the last /stats, its CPU time in µs, the number of
// requests that came over HTTP/2, then each request's lateness since its
// slot in ns, one a line.
func runReceiver() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var (
		mu   sync.Mutex
		late []int64
		slot int64
		h2   int
		cpu  = cpuTime()
	)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slot":
			at, _ := strconv.ParseInt(r.URL.Query().Get("at"), 10, 64)
			mu.Lock()
			slot = at
			mu.Unlock()
			return
		case "/stats":
			mu.Lock()
			now := cpuTime()
			fmt.Fprintln(w, (now - cpu).Microseconds())
			fmt.Fprintln(w, h2)
			for _, l := range late {
				fmt.Fprintln(w, l)
			}
			cpu, late, h2 = now, late[:0], 0
			mu.Unlock()
			return
		}
		at := time.Now().UnixNano()
		mu.Lock()
		late = append(late, at-slot)
		if r.ProtoMajor == 2 {
			h2++
		}
		mu.Unlock()
	})
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	cpu, ok := proc.SelfCPU()
	if !ok {
		panic("getrusage failed")
	}
	return cpu
}

// receiver is a runReceiver process.
type receiver struct {
	base  string
	url   string
	stdin io.Closer
	cmd   *exec.Cmd
}

func startReceiver(b *testing.B) *receiver {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), receiverEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &receiver{stdin: stdin, cmd: cmd}
	b.Cleanup(func() { _ = r.stdin.Close(); _ = r.cmd.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("receiver did not start: %v", err)
	}
	addr = strings.TrimSpace(addr)
	r.base = "http://" + addr
	r.url = r.base + "/hook"
	return r
}

// setSlot tells the receiver the slot of the next wave.
func (r *receiver) setSlot(b *testing.B, slot time.Time) {
	resp, err := http.Post(r.base+"/slot?at="+strconv.FormatInt(slot.UnixNano(), 10), "", nil)
	if err != nil {
		b.Fatal(err)
	}
	_ = resp.Body.Close()
}

// collect returns the receiver's CPU time, the number of HTTP/2 requests
// and the lateness of each request since the last collect.
func (r *receiver) collect(b *testing.B) (time.Duration, int, []time.Duration) {
	resp, err := http.Get(r.base + "/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var (
		cpu  time.Duration
		h2   int
		late []time.Duration
	)
	for i := 0; sc.Scan(); i++ {
		v, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			b.Fatalf("stats line %d: %v", i, err)
		}
		switch i {
		case 0:
			cpu = time.Duration(v) * time.Microsecond
		case 1:
			h2 = int(v)
		default:
			late = append(late, time.Duration(v))
		}
	}
	return cpu, h2, late
}

// BenchmarkHTTPWave fires waves of 10,000 webhooks of distinct jobs, all due
// at once, through a Pool of 64 workers (the scheduler's default) at one
// receiver in another process, as the floor scenario does; one op is one
// wave. It reports CPU per request of this process (the client) and of the
// receiver, allocations per request of the client, and the lateness at the
// receiver. The sub-benchmarks compare HTTP/1.1 with prior-knowledge h2c.
func BenchmarkHTTPWave(b *testing.B) {
	const workers, n = 64, 10_000
	for _, c := range []struct {
		name   string
		client func() *http.Client
		h2     bool
	}{
		{"http1", func() *http.Client { return nil }, false},
		{"h2c", h2cClient, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := startReceiver(b)
			pool := NewPool(workers, n, NewHTTPExecutor(c.client()), nil)
			defer pool.Close()
			jobs := waveJobs(n, r.url)
			fireWave(b, r, pool, jobs[:workers]) // open the connections, as a running node has them open
			r.collect(b)

			var cpu, recvCPU time.Duration
			var allocs uint64
			var late []time.Duration
			for b.Loop() {
				c0, a0 := cpuTime(), mallocs()
				fireWave(b, r, pool, jobs)
				cpu += cpuTime() - c0
				allocs += mallocs() - a0
				rc, h2, l := r.collect(b)
				if want := len(l) * btoi(c.h2); h2 != want {
					b.Fatalf("%d of %d requests came over HTTP/2, want %d", h2, len(l), want)
				}
				recvCPU += rc
				late = append(late, l...)
			}
			reqs := float64(b.N * n)
			if len(late) != b.N*n {
				b.Fatalf("receiver saw %d requests, want %d", len(late), b.N*n)
			}
			slices.Sort(late)
			b.ReportMetric(float64(cpu.Microseconds())/reqs, "client-cpu-µs/req")
			b.ReportMetric(float64(recvCPU.Microseconds())/reqs, "recv-cpu-µs/req")
			b.ReportMetric(float64(allocs)/reqs, "client-allocs/req")
			b.ReportMetric(float64(late[len(late)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(late[len(late)*99/100].Milliseconds()), "p99-ms")
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// h2cClient is the executor's own transport speaking HTTP/2 with prior
// knowledge over cleartext, and nothing else.
func h2cClient() *http.Client {
	t := newTransport(nil, nil)
	t.Protocols = new(http.Protocols)
	t.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: t}
}

// mallocs is the number of heap allocations of this process so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// waveJobs is n attempts of distinct jobs, each with a target of its own as
// the scheduler's are.
func waveJobs(n int, url string) []Attempt {
	jobs := make([]Attempt, n)
	for i := range jobs {
		jobs[i] = Attempt{
			Job: "wave-" + strconv.Itoa(i), RunID: "run", Token: uint64(i + 1), Number: 1,
			HTTP: &pb.HttpTarget{Url: url, Method: "POST", Headers: map[string]string{"Content-Type": "application/json"}},
		}
	}
	return jobs
}

// fireWave submits every attempt of jobs for one slot, now, and waits until
// all are delivered.
func fireWave(b *testing.B, r *receiver, pool *Pool, jobs []Attempt) {
	slot := time.Now()
	r.setSlot(b, slot)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	done := func(_ Attempt, o Outcome) {
		if o.State != pb.RunState_RUN_STATE_SUCCEEDED {
			mu.Lock()
			failed = append(failed, o.Detail)
			mu.Unlock()
		}
		wg.Done()
	}
	for _, a := range jobs {
		a.ScheduledAt = slot
		wg.Add(1)
		if err := pool.Submit(context.Background(), a, done); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	if len(failed) > 0 {
		b.Fatalf("%d of %d requests failed; first: %s", len(failed), len(jobs), failed[0])
	}
}
