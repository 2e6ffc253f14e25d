// Package cafiles reads the PEM files named by the CLI's repeatable CA bundle flags
// (--ca-bundle, --oidc-ca-bundle, --concierge-ca-bundle): like upstream's, each occurrence of such
// a flag, or each comma-separated path in it, adds a file, and certificates from all are trusted.
package cafiles

import (
	"fmt"
	"os"
)

// Read concatenates the files at paths, adding a newline after a file that lacks a final one so
// that it does not run into the next. flag names the flag in errors. No paths gives nil.
func Read(flag string, paths []string) ([]byte, error) {
	var bundle []byte
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading --%s: %w", flag, err)
		}
		bundle = append(bundle, data...)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			bundle = append(bundle, '\n')
		}
	}
	return bundle, nil
}
