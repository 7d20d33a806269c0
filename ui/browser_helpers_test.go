package ui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/raftcron/raftcron/internal/testutil"
)

// browserTimeout bounds one whole browser test; stepTimeout one run of
// actions (a wait included), leaving time to report what the page showed.
const (
	browserTimeout = 3 * time.Minute
	stepTimeout    = 20 * time.Second
)

// screenshotsEnv names a directory to write the README's screenshots to
// (docs/ui); unset, none are taken.
const screenshotsEnv = "RAFTCRON_UI_SCREENSHOTS"

// Viewports of the screenshots and of the phone test.
var (
	desktop = viewport{"desktop", 1280, 800, false}
	phone   = viewport{"phone", 390, 844, true}
)

type viewport struct {
	name          string
	width, height int64
	mobile        bool
}

// chromiumPath finds Debian's chromium, or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testutil.SkipOrFail(t, "browser tests need chromium on PATH (apt-get install -y --no-install-recommends chromium)")
	return ""
}

// newBrowser starts a headless chromium with a fresh profile and returns
// a tab's context; everything ends with the test.
func newBrowser(t *testing.T, vp viewport) context.Context {
	t.Helper()
	exe := chromiumPath(t)
	profile := profileDir(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Headless,
		chromedp.DisableGPU,
		// Root in CI cannot use chromium's sandbox.
		chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(int(vp.width), int(vp.height)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(format string, args ...any) {
		// chromedp does not know every event of a newer chromium; harmless.
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled") {
			t.Log(msg)
		}
	}))
	t.Cleanup(func() {
		// Close the browser and wait for it before its profile goes.
		_ = chromedp.Cancel(bctx)
		bcancel()
	})
	// A script error fails the test: the pages must run clean.
	chromedp.ListenTarget(bctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			t.Errorf("page script error: %s", e.ExceptionDetails.Error())
		}
	})
	// The first Run starts the browser, which lives as long as its context:
	// this one is bctx itself, not a step's shorter one.
	if err := chromedp.Run(bctx, emulation.SetDeviceMetricsOverride(vp.width, vp.height, 1, vp.mobile)); err != nil {
		t.Fatal(err)
	}
	return bctx
}

// profileDir is a fresh chromium profile, removed after the browser has
// gone. Chromium's helpers may still write to it for a moment after the
// browser exits, which t.TempDir's cleanup reports as an error.
func profileDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "raftcron-ui-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("chromium profile %s left behind", dir)
	})
	return dir
}

// run runs actions within stepTimeout; on failure it reports the page's
// text, so a failed wait says what was there instead.
func run(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Run(sctx, actions...); err != nil {
		var page string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`location.href + "\n" + document.body.innerText`, &page))
		t.Fatalf("%v; the page shows:\n%s", err, page)
	}
}

// waitText waits until the element sel shows text.
func waitText(sel, text string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		for {
			var got string
			if err := chromedp.Run(ctx, chromedp.Text(sel, &got, chromedp.ByQuery)); err != nil {
				return err
			}
			if strings.Contains(got, text) {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// text is the text of sel now.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	run(t, ctx, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// count is how many elements match sel now.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	var n int
	run(t, ctx, chromedp.Evaluate(`document.querySelectorAll(`+jsString(sel)+`).length`, &n))
	return n
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// clickButton clicks the visible button whose text is label.
func clickButton(label string) chromedp.Action {
	return chromedp.Click(`//button[normalize-space(.)="`+label+`"]`, chromedp.BySearch, chromedp.NodeVisible)
}

// settled waits for two animation frames: the store renders once per frame.
var settled = chromedp.Evaluate(`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil,
	func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })

// screenshot saves the viewport as docs/ui/<name>-<viewport>.png when asked to.
func screenshot(t *testing.T, ctx context.Context, vp viewport, name string) {
	t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		return
	}
	var png []byte
	run(t, ctx, settled, chromedp.CaptureScreenshot(&png))
	if err := os.WriteFile(filepath.Join(dir, name+"-"+vp.name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
