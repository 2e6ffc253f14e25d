package audit

import "fmt"

// Setting is the value of an audit switch in the servers' configuration files, spelled as
// Pinniped's: "enabled", "disabled", or empty for the default, disabled.
type Setting string

const (
	Enabled  Setting = "enabled"
	Disabled Setting = "disabled"
)

// Enabled says whether the switch is on.
func (s Setting) Enabled() bool { return s == Enabled }

// Validate refuses any other spelling, naming the configuration key.
func (s Setting) Validate(key string) error {
	switch s {
	case "", Enabled, Disabled:
		return nil
	}
	return fmt.Errorf("%s: must be %q, %q or empty (the same as %q), got %q", key, Enabled, Disabled, Disabled, string(s))
}
