// Package install registers the identity.concierge.pinniped.dev API group, hub and v1alpha1, into a
// scheme.
package install

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"sealion.dev/core/apis/concierge/identity"
	"sealion.dev/core/apis/concierge/identity/v1alpha1"
)

// Install adds the hub and v1alpha1 types of the group, and the conversions between them, to
// scheme, and makes v1alpha1 the preferred version.
func Install(scheme *runtime.Scheme) error {
	if err := identity.AddToScheme(scheme); err != nil {
		return fmt.Errorf("adding %s hub types to scheme: %w", identity.GroupName, err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("adding %s types to scheme: %w", v1alpha1.SchemeGroupVersion, err)
	}
	if err := scheme.SetVersionPriority(v1alpha1.SchemeGroupVersion); err != nil {
		return fmt.Errorf("setting version priority of %s: %w", identity.GroupName, err)
	}
	return nil
}
