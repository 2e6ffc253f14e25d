package oidclogin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// OpenURL opens rawURL in the user's browser without waiting for it: with the first command of
// $BROWSER that starts (a colon-separated list in which "%s" stands for the URL, else the URL is
// the last argument), or else with xdg-open.
func OpenURL(rawURL string) error {
	return openURL(rawURL, os.Getenv("BROWSER"))
}

func openURL(rawURL, browserEnv string) error {
	commands := [][]string{{"xdg-open", rawURL}}
	if browserEnv != "" {
		commands = nil
		for _, entry := range strings.Split(browserEnv, ":") {
			args := strings.Fields(entry)
			if len(args) == 0 {
				continue
			}
			substituted := false
			for i, a := range args {
				if strings.Contains(a, "%s") {
					args[i], substituted = strings.ReplaceAll(a, "%s", rawURL), true
				}
			}
			if !substituted {
				args = append(args, rawURL)
			}
			commands = append(commands, args)
		}
	}
	var errs []error
	for _, args := range commands {
		// The browser's output must not reach stdout, which carries the ExecCredential.
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		go func() { _ = cmd.Wait() }()
		return nil
	}
	return fmt.Errorf("could not open a browser (set $BROWSER): %w", errors.Join(errs...))
}
