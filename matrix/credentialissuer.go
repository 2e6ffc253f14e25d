package matrix

import (
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
)

// CredentialIssuersFile is the name of the file e2e/steps.SaveCredentialIssuers writes in each
// cluster's log folder.
const CredentialIssuersFile = "credentialissuers.yaml"

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
