package matrix

import (
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
)

// The files e2e/steps.SaveCredentialIssuersTo writes in each cluster's log folder (the names of
// its CredentialIssuersFile and CredentialIssuersCSREnabledFile).
const (
	// CredentialIssuersFile is the CredentialIssuers at the end of the suite.
	CredentialIssuersFile = "credentialissuers.yaml"
	// CredentialIssuersCSREnabledFile is the CredentialIssuers while the suite had the
	// CertificateSigningRequest strategy enabled.
	CredentialIssuersCSREnabledFile = "credentialissuers-certificatesigningrequest-enabled.yaml"
)

// StrategyEntry is what a CredentialIssuer said of one strategy.
type StrategyEntry struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// StrategyEntries reads CredentialIssuerLists (`kubectl get credentialissuers -o yaml`) and
// returns the entry of each strategy type, taken from the first list that has one: the suite's
// last list first, then those saved while a test changed the mode of a strategy that is listed
// only then.
func StrategyEntries(lists ...[]byte) ([]StrategyEntry, error) {
	var entries []StrategyEntry
	for _, data := range lists {
		var list configv1alpha1.CredentialIssuerList
		if err := yaml.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("reading CredentialIssuers: %w", err)
		}
		for _, ci := range list.Items {
			for _, s := range ci.Status.Strategies {
				if !slices.ContainsFunc(entries, func(e StrategyEntry) bool { return e.Type == string(s.Type) }) {
					entries = append(entries, StrategyEntry{Type: string(s.Type), Status: string(s.Status), Reason: string(s.Reason)})
				}
			}
		}
	}
	return entries, nil
}

// ChosenStrategies reads a CredentialIssuerList (`kubectl get credentialissuers -o yaml`) and
// returns the types of its successful strategies, in the order the Concierge lists them.
func ChosenStrategies(data []byte) ([]string, error) {
	var list configv1alpha1.CredentialIssuerList
	if err := yaml.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("reading CredentialIssuers: %w", err)
	}
	chosen := []string{}
	for _, ci := range list.Items {
		for _, s := range ci.Status.Strategies {
			if s.Status == configv1alpha1.StrategyStatusSuccess && !slices.Contains(chosen, string(s.Type)) {
				chosen = append(chosen, string(s.Type))
			}
		}
	}
	return chosen, nil
}
