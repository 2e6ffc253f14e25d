package steps

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sealion.dev/fixtures/browser"
)

func TestSaveLoginScreenshot(t *testing.T) {
	logs := t.TempDir()
	t.Setenv("SEALION_E2E_LOGS", logs)
	png := []byte("\x89PNG fake")
	SaveLoginScreenshot(fmt.Errorf("browser login: %w", &browser.LoginError{Err: errors.New("no form"), URL: "https://dex/login", Screenshot: png}), "pinny@example.com")
	SaveLoginScreenshot(errors.New("not a browser error"), "walter@example.com")
	SaveLoginScreenshot(&browser.LoginError{Err: errors.New("no tab")}, "nobody/../x") // no screenshot taken

	found, _ := filepath.Glob(filepath.Join(logs, "screenshots", "*"))
	if len(found) != 1 || filepath.Ext(found[0]) != ".png" || !filepath.IsAbs(found[0]) {
		t.Fatalf("screenshots %v, want one PNG", found)
	}
	if got, _ := os.ReadFile(found[0]); string(got) != string(png) {
		t.Errorf("screenshot content %q", got)
	}
	if base := filepath.Base(found[0]); base[len(base)-len("-pinny@example.com.png"):] != "-pinny@example.com.png" {
		t.Errorf("name %s", base)
	}
	if got := fileSafe("a b/../c"); got != "a_b_.._c" {
		t.Errorf("fileSafe = %q", got)
	}
}
