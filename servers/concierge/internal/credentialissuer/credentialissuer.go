// Package credentialissuer records the Concierge's strategies in the status of its CredentialIssuer,
// and reads the settings of its spec that more than one strategy follows.
// Each strategy (the kube cert agent, the impersonation proxy, the CertificateSigningRequest one) owns the status entry of its type and
// writes it through an Updater, which leaves the other entries alone, creates the CredentialIssuer
// when it is missing, and writes nothing when the entry is unchanged, so that controllers which
// resync often do not cause a stream of writes (and of watch events that resync them again).
package credentialissuer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	configlisters "sealion.dev/core/generated/concierge/listers/config/v1alpha1"
)

// CertificateSigningRequestMode is the CertificateSigningRequest strategy's mode in the
// CredentialIssuer named name; auto when it does not say. The strategy follows it, and the kube
// cert agent, which does not run while the strategy is enabled.
func CertificateSigningRequestMode(lister configlisters.CredentialIssuerLister, name string) configv1alpha1.CertificateSigningRequestMode {
	ci, err := lister.Get(name)
	if err != nil || ci.Spec.CertificateSigningRequest == nil || ci.Spec.CertificateSigningRequest.Mode == "" {
		return configv1alpha1.CertificateSigningRequestModeAuto
	}
	return ci.Spec.CertificateSigningRequest.Mode
}

// Updater writes strategy entries into one CredentialIssuer.
type Updater struct {
	Client conciergeclientset.Interface
	// Lister, when set, is read first so that an unchanged entry costs no API call.
	Lister configlisters.CredentialIssuerLister
	// Name of the CredentialIssuer (config names.credentialIssuer).
	Name string
	// Labels and Spec are used only when the CredentialIssuer has to be created.
	Labels map[string]string
	Spec   configv1alpha1.CredentialIssuerSpec
	// LeaveMissing makes SetStrategy fail while the CredentialIssuer is missing, rather than
	// create it, where the install creates it (config credentialIssuerCreatedByInstall): Helm
	// creates it after the Concierge starts, and fails if it is there already.
	LeaveMissing bool
	// Now stamps lastUpdateTime; time.Now when nil.
	Now func() time.Time
}

// SetStrategy makes the status entry of s.Type equal to s, ignoring s.LastUpdateTime, which it
// sets to the current time when the entry changes.
func (u *Updater) SetStrategy(ctx context.Context, s configv1alpha1.CredentialIssuerStrategy) error {
	if u.Lister != nil {
		if cached, err := u.Lister.Get(u.Name); err == nil && !Merge(cached.Status.DeepCopy(), s, u.now()) {
			return nil
		}
	}
	client := u.Client.ConfigV1alpha1().CredentialIssuers()
	// Other strategies write the same object: on a conflict, read it again and merge again.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.Get(ctx, u.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && u.LeaveMissing {
			return fmt.Errorf("%w (the install creates it)", err)
		}
		if apierrors.IsNotFound(err) {
			current, err = client.Create(ctx, &configv1alpha1.CredentialIssuer{
				ObjectMeta: metav1.ObjectMeta{Name: u.Name, Labels: u.Labels},
				Spec:       *u.Spec.DeepCopy(),
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(configv1alpha1.Resource("credentialissuers"), u.Name, err)
			}
		}
		if err != nil {
			return err
		}
		updated := current.DeepCopy()
		if !Merge(&updated.Status, s, u.now()) {
			return nil
		}
		_, err = client.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the %s strategy in CredentialIssuer %s: %w", s.Type, u.Name, err)
	}
	return nil
}

// RemoveStrategy removes the status entry of typ, if there is one: a strategy that is not in use
// and whose entry would only confuse clients that expect Pinniped's entries.
func (u *Updater) RemoveStrategy(ctx context.Context, typ configv1alpha1.StrategyType) error {
	has := func(ci *configv1alpha1.CredentialIssuer) bool {
		return slices.ContainsFunc(ci.Status.Strategies, func(s configv1alpha1.CredentialIssuerStrategy) bool { return s.Type == typ })
	}
	if u.Lister != nil {
		if cached, err := u.Lister.Get(u.Name); err == nil && !has(cached) {
			return nil
		}
	}
	client := u.Client.ConfigV1alpha1().CredentialIssuers()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.Get(ctx, u.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil || !has(current) {
			return err
		}
		updated := current.DeepCopy()
		updated.Status.Strategies = slices.DeleteFunc(updated.Status.Strategies, func(s configv1alpha1.CredentialIssuerStrategy) bool { return s.Type == typ })
		_, err = client.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("removing the %s strategy from CredentialIssuer %s: %w", typ, u.Name, err)
	}
	return nil
}

func (u *Updater) now() time.Time {
	if u.Now != nil {
		return u.Now()
	}
	return time.Now()
}

// Merge puts s into status in place of the entry of the same type, or adds it, and reports
// whether status changed. An entry that differs from s only in LastUpdateTime is left as it is;
// a new or changed entry gets LastUpdateTime now. The entries are kept in upstream's order
// (strategyOrder), which older clients rely on.
func Merge(status *configv1alpha1.CredentialIssuerStatus, s configv1alpha1.CredentialIssuerStrategy, now time.Time) bool {
	s = *s.DeepCopy()
	s.LastUpdateTime = metav1.NewTime(now.UTC().Truncate(time.Second)) // the precision the API server keeps
	changed := true
	found := false
	for i, existing := range status.Strategies {
		if existing.Type != s.Type {
			continue
		}
		found = true
		existing.LastUpdateTime = s.LastUpdateTime
		if equality.Semantic.DeepEqual(existing, s) {
			changed = false
			break
		}
		status.Strategies[i] = s
		break
	}
	if !found {
		status.Strategies = append(status.Strategies, s)
	}
	if !slices.IsSortedFunc(status.Strategies, strategyOrder) {
		slices.SortStableFunc(status.Strategies, strategyOrder)
		changed = true
	}
	return changed
}

// strategyOrder puts KubeClusterSigningCertificate before ImpersonationProxy, as upstream does, with
// our CertificateSigningRequest between them, then any other type by name: a client that takes the
// first successful strategy (as upstream's CLI does) then picks a certificate the API server
// accepts, which needs no proxy, wherever one can be issued, in the order the Concierge issues.
func strategyOrder(a, b configv1alpha1.CredentialIssuerStrategy) int {
	weight := func(t configv1alpha1.StrategyType) int {
		switch t {
		case configv1alpha1.StrategyTypeKubeClusterSigningCertificate:
			return 3
		case configv1alpha1.StrategyTypeCertificateSigningRequest:
			return 2
		case configv1alpha1.StrategyTypeImpersonationProxy:
			return 1
		}
		return 0
	}
	if c := cmp.Compare(weight(b.Type), weight(a.Type)); c != 0 {
		return c
	}
	return cmp.Compare(a.Type, b.Type)
}
