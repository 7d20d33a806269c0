package testdb

import (
	"context"
	"database/sql"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

// TestServerOutlivesTheThreadThatStartedIt: the kernel SIGKILLs a server when the
// thread that forked it ends (Pdeathsig), and a Go thread ends when a goroutine locked
// to it does, which a test may do after the server started (internal/proc starts every
// child that way). The server must live on until Stop.
func TestServerOutlivesTheThreadThatStartedIt(t *testing.T) {
	var (
		srv *Server
		err error
	)
	tid := onEndingThread(func() { srv, err = StartPostgres() })
	if err != nil {
		Unavailable(t, err)
	}
	defer srv.Stop()
	task := "/proc/self/task/" + strconv.Itoa(tid)
	testutil.WaitFor(t, 10*time.Second, "the starting thread to end", func() bool {
		_, err := os.Stat(task)
		return os.IsNotExist(err)
	})
	// A server killed with the thread is gone within milliseconds.
	select {
	case <-srv.done:
		t.Fatalf("PostgreSQL died with the thread that started it: %s", srv.log)
	case <-time.After(2 * time.Second):
	}
	db, err := sql.Open(srv.Driver, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("PostgreSQL does not answer once the thread that started it ended: %v", err)
	}
}

// onEndingThread runs f on an OS thread that ends when f returns, and returns the
// thread's ID. That is any thread but the main one, which Go parks instead of ending it:
// a goroutine that lands there keeps it until another has run f elsewhere.
func onEndingThread(f func()) int {
	var parked []chan struct{}
	defer func() {
		for _, p := range parked {
			close(p)
		}
	}()
	for {
		ran := make(chan int)
		park := make(chan struct{})
		go func() {
			runtime.LockOSThread() // unlocked only on the main thread: any other ends with f
			if tid := syscall.Gettid(); tid != syscall.Getpid() {
				f()
				ran <- tid
				return
			}
			ran <- 0
			<-park
			runtime.UnlockOSThread()
		}()
		if tid := <-ran; tid != 0 {
			return tid
		}
		parked = append(parked, park)
	}
}
