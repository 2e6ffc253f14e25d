package steps

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sealion.dev/fixtures/browser"
)

// SaveLoginScreenshot keeps what the browser showed when a login failed: when err carries a
// *browser.LoginError with a screenshot and SEALION_E2E_LOGS names the suite's log folder, the
// PNG goes to its screenshots/ folder (the matrix report shows it) and stderr says where.
func SaveLoginScreenshot(err error, user string) {
	var le *browser.LoginError
	logs := os.Getenv("SEALION_E2E_LOGS")
	if logs == "" || !errors.As(err, &le) || len(le.Screenshot) == 0 {
		return
	}
	dir := filepath.Join(logs, "screenshots")
	path := filepath.Join(dir, time.Now().Format("150405.000")+"-"+fileSafe(user)+".png")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		err = os.WriteFile(path, le.Screenshot, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: could not save the screenshot of the failed login as %s: %v\n", user, err)
		return
	}
	fmt.Fprintf(os.Stderr, "e2e: the browser at the failed login as %s (%s): %s\n", user, le.URL, path)
}

// fileSafe keeps letters, digits and @._- of s.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@._-", r) {
			return r
		}
		return '_'
	}, s)
}
