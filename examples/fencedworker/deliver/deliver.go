// Package deliver is the handler of the fencedworker example: it hands a
// run's payload to a downstream service that fences every write on the
// run's token and de-duplicates on its idempotency key (examples/ledger,
// or any service behind fence.Middleware), so that the effect happens
// exactly once per run however often raftcron delivers it.
package deliver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/worker"
)

// HandlerName is what a job's worker.handler names.
const HandlerName = "deliver"

// Handler returns the worker handler: it POSTs the run's payload to url
// with the run's fencing headers (fence.Run.SetHeader). 2xx means the
// effect is applied (now, or by an earlier attempt of the run: the
// downstream answers a repeat without a second effect); 409 means a newer
// attempt exists, which the worker records FENCED (never retried).
func Handler(client *http.Client, url string) worker.HandlerFunc {
	return func(ctx context.Context, run worker.Run) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(run.Payload))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		run.Fence().SetHeader(req.Header)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		body = bytes.TrimSpace(body)
		switch {
		case resp.StatusCode == http.StatusConflict:
			return fmt.Errorf("%w: token %d refused: %s", fence.ErrStale, run.Token, body)
		case resp.StatusCode/100 != 2:
			return fmt.Errorf("%s answered %s: %s", url, resp.Status, body)
		}
		return nil
	}
}
