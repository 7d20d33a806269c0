package harness

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fence"
)

func post(t *testing.T, url string, h map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sink answered %d", resp.StatusCode)
	}
}

func TestSinkRecordsDeliveriesAndLateness(t *testing.T) {
	s, err := NewSink()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	slot := time.Now().Truncate(time.Second)
	post(t, s.URL(), map[string]string{
		fence.HeaderJob: "a", fence.HeaderRunID: "a-7", fence.HeaderFencingToken: "7", fence.HeaderAttempt: "2",
		fence.HeaderScheduledAt: slot.UTC().Format(time.RFC3339),
	})
	post(t, s.URL(), map[string]string{fence.HeaderJob: "b"}) // no run id, token, ...
	if s.Len() != 1 || s.Malformed() != 1 {
		t.Fatalf("Len %d Malformed %d, want 1 and 1", s.Len(), s.Malformed())
	}
	d := s.Since(0)[0]
	if d.Job != "a" || d.RunID != "a-7" || d.Token != 7 || d.Attempt != 2 || d.Slot != slot.Unix() {
		t.Errorf("delivery = %+v", d)
	}
	if l := d.Lateness(); l < 0 || l > time.Minute {
		t.Errorf("lateness %v out of range", l)
	}
}

func TestSinkWatchSeesEachDeliveryOnceAndHonoursTheDeadline(t *testing.T) {
	s, err := NewSink()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	go func() {
		for i := range 3 {
			post(t, s.URL(), map[string]string{
				fence.HeaderJob: "j", fence.HeaderRunID: "r", fence.HeaderFencingToken: "1", fence.HeaderAttempt: "1",
				fence.HeaderScheduledAt: time.Unix(int64(i), 0).UTC().Format(time.RFC3339),
			})
		}
	}()
	seen := 0
	ok := s.Watch(context.Background(), time.Now().Add(10*time.Second), 0, func(b []Delivery) bool {
		seen += len(b)
		return seen >= 3
	})
	if !ok || seen != 3 {
		t.Fatalf("Watch ok=%v seen=%d, want true and 3", ok, seen)
	}
	start := time.Now()
	if s.Watch(context.Background(), start.Add(150*time.Millisecond), 3, func([]Delivery) bool { return false }) {
		t.Fatal("Watch reported a condition that never held")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("Watch overran its deadline")
	}
}
