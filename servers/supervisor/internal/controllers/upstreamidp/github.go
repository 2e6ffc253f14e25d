package upstreamidp

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/upstreamgithub"
)

// syncGitHub validates every GitHubIdentityProvider, dials its API, and publishes the Ready ones.
func (c *Controller) syncGitHub(ctx context.Context) error {
	idps, err := c.github.List(labels.Everything())
	if err != nil {
		return err
	}
	usable := map[string]*upstreamgithub.Provider{}
	seen := map[types.UID]bool{}
	var errs []error
	for _, idp := range idps {
		seen[idp.UID] = true
		p, conds, err := c.validateGitHub(ctx, idp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p != nil {
			usable[idp.Name] = p
		}
		errs = append(errs, writeStatus(ctx, "GitHubIdentityProvider", idp.Name, idp.Status, conds,
			func(s idpv1alpha1.IdentityProviderStatus) *idpv1alpha1.GitHubIdentityProvider {
				u := idp.DeepCopy()
				u.Status = s
				return u
			},
			c.supervisor.IdpV1alpha1().GitHubIdentityProviders(c.namespace).UpdateStatus))
	}
	c.githubProbes.retain(seen)
	c.registry.SetGitHub(c.namespace, usable)
	return errors.Join(errs...)
}

// validateGitHub returns the conditions of idp, and its Provider when they are all true.
func (c *Controller) validateGitHub(ctx context.Context, idp *idpv1alpha1.GitHubIdentityProvider) (*upstreamgithub.Provider, []metav1.Condition, error) {
	secret, err := c.secret(idp.Spec.Client.SecretName)
	if err != nil {
		return nil, nil, err
	}
	caBundle, tlsErr := c.caBundle(idp.Spec.GitHubAPI.TLS)
	p, address, conds := upstreamgithub.Prepare(idp.Spec, idp.Generation, secret, caBundle, tlsErr)
	if address == "" {
		return nil, conds, nil // GitHubConnectionValid is already in conds, Unknown
	}
	// The dial depends on the host (in the spec) and the CA bundle only.
	fp, now := fingerprint(idp.Generation, nil, caBundle), c.now()
	cond, fresh, _ := c.githubProbes.get(idp.UID, fp, now)
	if !fresh {
		probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := c.probes.github(probeCtx, address, caBundle)
		cancel()
		cond = upstreamgithub.ConnectionCondition(address, idp.Generation, err)
		if err == nil {
			c.githubProbes.put(idp.UID, fp, now, cond)
		}
	}
	conds = append(conds, cond)
	if p == nil || !allTrue(conds) {
		return nil, conds, nil
	}
	return p, conds, nil
}
