package fsm_test

import (
	"fmt"
	"testing"

	"github.com/raftcron/raftcron/fsm"
)

// listHarness registers job-00 … job-24 (created in scrambled order):
// team=even|odd by parity, and env=prod on multiples of 3.
func listHarness(t *testing.T) *harness {
	h := newHarness(t)
	for i := range 25 {
		n := (i * 7) % 25
		spec := testSpec(fmt.Sprintf("job-%02d", n))
		spec.Labels = map[string]string{"team": []string{"even", "odd"}[n%2]}
		if n%3 == 0 {
			spec.Labels["env"] = "prod"
		}
		h.mustOK(createCmd(spec))
	}
	return h
}

func names(h *harness, q fsm.ListQuery) ([]string, string) {
	jobs, next := h.f.ListJobs(q)
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.GetSpec().GetName()
	}
	return out, next
}

func jobNames(nums ...int) []string {
	out := make([]string, len(nums))
	for i, n := range nums {
		out[i] = fmt.Sprintf("job-%02d", n)
	}
	return out
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestListJobsPagesInNameOrder(t *testing.T) {
	h := listHarness(t)
	var all []string
	q := fsm.ListQuery{Limit: 10}
	for page := 0; ; page++ {
		if page == 5 {
			t.Fatal("paging did not end after 5 pages of 10 over 25 jobs")
		}
		got, next := names(h, q)
		all = append(all, got...)
		if next == "" {
			break
		}
		if next != got[len(got)-1] {
			t.Fatalf("nextAfter %q, want the page's last name %q", next, got[len(got)-1])
		}
		q.After = next
	}
	want := make([]int, 25)
	for i := range want {
		want[i] = i
	}
	if !sameNames(all, jobNames(want...)) {
		t.Fatalf("paged names %v, want job-00 … job-24 in order", all)
	}

	if got, next := names(h, fsm.ListQuery{}); len(got) != 25 || next != "" {
		t.Fatalf("no limit: %d jobs, nextAfter %q; want 25 and \"\"", len(got), next)
	}
	if got, next := names(h, fsm.ListQuery{After: "job-19x", Limit: -1}); !sameNames(got, jobNames(20, 21, 22, 23, 24)) || next != "" {
		t.Fatalf("after a name between jobs: %v %q", got, next)
	}
	if got, next := names(h, fsm.ListQuery{After: "job-24"}); len(got) != 0 || next != "" {
		t.Fatalf("after the last name: %v %q, want nothing", got, next)
	}
	if got, next := names(h, fsm.ListQuery{Limit: 25}); len(got) != 25 || next != "" {
		t.Fatalf("limit equal to the count: %d jobs, nextAfter %q; want 25 and \"\"", len(got), next)
	}
}

func TestListJobsFiltersByLabels(t *testing.T) {
	h := listHarness(t)
	got, next := names(h, fsm.ListQuery{Labels: map[string]string{"team": "odd", "env": "prod"}, Limit: 2})
	if !sameNames(got, jobNames(3, 9)) || next != "job-09" {
		t.Fatalf("first page of odd prod jobs: %v %q, want [job-03 job-09] job-09", got, next)
	}
	got, next = names(h, fsm.ListQuery{Labels: map[string]string{"team": "odd", "env": "prod"}, Limit: 2, After: next})
	if !sameNames(got, jobNames(15, 21)) || next != "" {
		t.Fatalf("last page of odd prod jobs: %v %q, want [job-15 job-21] and no next page", got, next)
	}
	if got, _ := names(h, fsm.ListQuery{Labels: map[string]string{"env": ""}}); len(got) != 0 {
		t.Fatalf("env=\"\" matched %v, want nothing: a selector needs the label present with that value", got)
	}
	if got, _ := names(h, fsm.ListQuery{Labels: map[string]string{"team": "even"}}); len(got) != 13 {
		t.Fatalf("team=even matched %d jobs, want 13", len(got))
	}
}

// MaxScan bounds the jobs one call looks at: a selective filter answers
// short pages, even empty ones, with a nextAfter to go on from, and paging
// on finds every match once.
func TestListJobsBoundsTheScan(t *testing.T) {
	h := listHarness(t)
	q := fsm.ListQuery{Labels: map[string]string{"env": "prod", "team": "odd"}, Limit: 100, MaxScan: 5}
	got, next := names(h, q)
	if want := jobNames(3); fmt.Sprint(got) != fmt.Sprint(want) || next != "job-04" {
		t.Fatalf("first call: %v, next %q; want %v and next job-04 (5 jobs looked at)", got, next, want)
	}
	var all []string
	calls := 1
	for all = got; next != ""; calls++ {
		q.After = next
		got, next = names(h, q)
		all = append(all, got...)
		if calls > 10 {
			t.Fatal("paging does not end")
		}
	}
	if want := jobNames(3, 9, 15, 21); fmt.Sprint(all) != fmt.Sprint(want) || calls != 5 {
		t.Fatalf("paged: %v in %d calls, want %v in 5", all, calls, want)
	}
	// The page limit still ends a call early, at the last job returned.
	q = fsm.ListQuery{Labels: map[string]string{"team": "odd"}, Limit: 2, MaxScan: 100}
	if got, next := names(h, q); fmt.Sprint(got) != fmt.Sprint(jobNames(1, 3)) || next != "job-03" {
		t.Fatalf("page of 2: %v, next %q; want %v and next job-03", got, next, jobNames(1, 3))
	}
}
