package matrix

import (
	"fmt"

	"sealion.dev/providers/existing"
)

// withProfileStrategy returns d with the strategy its profile expects, for a distribution whose
// catalog entry says strategyFromProfile: the existing provider's profile, named by
// $SEALION_EXISTING_PROFILE (the e2e suite reads the same variable). The generic profile, and an
// unset variable, leave the strategy reported, not asserted.
func (d Distribution) withProfileStrategy(getenv func(string) string) (Distribution, error) {
	if !d.StrategyFromProfile {
		return d, nil
	}
	name := ""
	if getenv != nil {
		name = getenv(existing.ProfileEnv)
	}
	p, err := existing.LookupProfile(name)
	if err != nil {
		return d, fmt.Errorf("distribution %s: %w", d.Name, err)
	}
	d.Strategy = p.Strategy()
	return d, nil
}
