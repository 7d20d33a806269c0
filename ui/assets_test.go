package ui

import (
	"io/fs"
	"regexp"
	"testing"
)

// TestPagesLoadNothingFromElsewhere: every script, style and module the
// pages load comes from the node itself.
func TestPagesLoadNothingFromElsewhere(t *testing.T) {
	external := regexp.MustCompile(`(?:\bfrom\s*|\bimport\s*\(?\s*|\b(?:src|href)\s*=\s*)["'](?:https?:)?//`)
	n := 0
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		n++
		if m := external.Find(b); m != nil {
			t.Errorf("%s loads from elsewhere: %s", p, m)
		}
		return nil
	})
	if err != nil || n < 10 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
