package upstreamidp

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/upstreamad"
	"sealion.dev/servers/supervisor/internal/upstreamldap"
)

// ldapResult is a successful probe: the Provider that connected (it remembers the protocol that
// worked) and its LDAPConnectionValid condition.
type ldapResult struct {
	provider *upstreamldap.Provider
	cond     metav1.Condition
}

// adResult is a successful upstreamad.Connect: the Provider with its search bases resolved and
// the SearchBaseFound and LDAPConnectionValid conditions.
type adResult struct {
	provider *upstreamldap.Provider
	conds    []metav1.Condition
}

// syncLDAP validates and probes every LDAPIdentityProvider and publishes the Ready ones.
func (c *Controller) syncLDAP(ctx context.Context) error {
	idps, err := c.ldap.List(labels.Everything())
	if err != nil {
		return err
	}
	usable := map[string]*upstreamldap.Provider{}
	seen := map[types.UID]bool{}
	var errs []error
	for _, idp := range idps {
		seen[idp.UID] = true
		p, conds, err := c.validateLDAP(ctx, idp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p != nil {
			usable[idp.Name] = p
		}
		errs = append(errs, writeStatus(ctx, "LDAPIdentityProvider", idp.Name, idp.Status, conds,
			func(s idpv1alpha1.IdentityProviderStatus) *idpv1alpha1.LDAPIdentityProvider {
				u := idp.DeepCopy()
				u.Status = s
				return u
			},
			c.supervisor.IdpV1alpha1().LDAPIdentityProviders(c.namespace).UpdateStatus))
	}
	c.ldapProbes.retain(seen)
	c.registry.SetLDAP(c.namespace, usable)
	return errors.Join(errs...)
}

// validateLDAP returns the conditions of idp, and its Provider when they are all true.
func (c *Controller) validateLDAP(ctx context.Context, idp *idpv1alpha1.LDAPIdentityProvider) (*upstreamldap.Provider, []metav1.Condition, error) {
	secret, err := c.secret(idp.Spec.Bind.SecretName)
	if err != nil {
		return nil, nil, err
	}
	caBundle, tlsErr := c.caBundle(idp.Spec.TLS)
	p, conds := upstreamldap.Prepare(idp.Spec, idp.Generation, secret, caBundle, tlsErr)
	if p == nil {
		return nil, conds, nil
	}
	fp, now := fingerprint(idp.Generation, secret, caBundle), c.now()
	if r, fresh, _ := c.ldapProbes.get(idp.UID, fp, now); fresh {
		return r.provider, append(conds, r.cond), nil
	}
	probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
	protocol, err := c.probes.ldap(probeCtx, p)
	cancel()
	cond := upstreamldap.ConnectionCondition(p, idp.Generation, protocol, err)
	if err != nil {
		return nil, append(conds, cond), nil
	}
	c.ldapProbes.put(idp.UID, fp, now, ldapResult{provider: p, cond: cond})
	return p, append(conds, cond), nil
}

// syncActiveDirectory validates and probes every ActiveDirectoryIdentityProvider and publishes
// the Ready ones.
func (c *Controller) syncActiveDirectory(ctx context.Context) error {
	idps, err := c.ad.List(labels.Everything())
	if err != nil {
		return err
	}
	usable := map[string]*upstreamldap.Provider{}
	seen := map[types.UID]bool{}
	var errs []error
	for _, idp := range idps {
		seen[idp.UID] = true
		p, conds, err := c.validateActiveDirectory(ctx, idp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p != nil {
			usable[idp.Name] = p
		}
		errs = append(errs, writeStatus(ctx, "ActiveDirectoryIdentityProvider", idp.Name, idp.Status, conds,
			func(s idpv1alpha1.IdentityProviderStatus) *idpv1alpha1.ActiveDirectoryIdentityProvider {
				u := idp.DeepCopy()
				u.Status = s
				return u
			},
			c.supervisor.IdpV1alpha1().ActiveDirectoryIdentityProviders(c.namespace).UpdateStatus))
	}
	c.adProbes.retain(seen)
	c.registry.SetActiveDirectory(c.namespace, usable)
	return errors.Join(errs...)
}

// validateActiveDirectory returns the conditions of idp, and its Provider when they are all true.
func (c *Controller) validateActiveDirectory(ctx context.Context, idp *idpv1alpha1.ActiveDirectoryIdentityProvider) (*upstreamldap.Provider, []metav1.Condition, error) {
	secret, err := c.secret(idp.Spec.Bind.SecretName)
	if err != nil {
		return nil, nil, err
	}
	caBundle, tlsErr := c.caBundle(idp.Spec.TLS)
	cfg, conds := upstreamad.Prepare(idp.Spec, idp.Generation, secret, caBundle, tlsErr)
	if cfg == nil {
		return nil, conds, nil
	}
	fp, now := fingerprint(idp.Generation, secret, caBundle), c.now()
	if r, fresh, _ := c.adProbes.get(idp.UID, fp, now); fresh {
		return r.provider, append(conds, r.conds...), nil
	}
	probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
	p, connConds := c.probes.activeDirectory(probeCtx, *cfg, idp.Generation)
	cancel()
	conds = append(conds, connConds...)
	if p == nil {
		return nil, conds, nil
	}
	c.adProbes.put(idp.UID, fp, now, adResult{provider: p, conds: connConds})
	return p, conds, nil
}
