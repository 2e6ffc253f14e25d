package federationdomain

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/signingkeys"
)

// keys are the keys of one FederationDomain, read from (or just written to) their Secrets.
type keys struct {
	jwks                                                 *signingkeys.JWKS
	jwksGenerated                                        time.Time
	tokenSigningKey, stateSigningKey, stateEncryptionKey []byte
	secrets                                              configv1alpha1.FederationDomainSecrets
}

// keySecret describes one key Secret: its owner, how to make its data and how to check it.
type keySecret struct {
	name string
	typ  corev1.SecretType
	// owner is nil for a Secret without one.
	owner    *metav1.OwnerReference
	generate func() (map[string][]byte, error)
	parse    func(map[string][]byte) error
	// generated, when set, receives the time the key in the Secret was generated.
	generated *time.Time
}

// ensureKeys makes sure every key Secret of fd exists, is readable and is owned by fd, and returns
// the keys. Unusable content is replaced, which is also how a deleted key is rotated.
func (c *Controller) ensureKeys(ctx context.Context, fd *configv1alpha1.FederationDomain) (*keys, error) {
	var k keys
	uid := string(fd.UID)
	owner := c.ownerReference(fd)
	jwksSecret := keySecret{
		name: signingkeys.JWKSSecretName(fd.Name), typ: signingkeys.JWKSSecretType, owner: &owner, generate: signingkeys.NewJWKS,
		generated: &k.jwksGenerated,
		parse: func(data map[string][]byte) (err error) {
			k.jwks, err = signingkeys.ParseJWKS(data)
			return err
		},
	}
	symmetric := func(s signingkeys.Symmetric, dest *[]byte) keySecret {
		return keySecret{
			name: s.SecretName(uid), typ: s.Type, owner: &owner, generate: s.New,
			parse: func(data map[string][]byte) (err error) {
				*dest, err = s.Parse(data)
				return err
			},
		}
	}
	for _, want := range []keySecret{
		jwksSecret,
		symmetric(signingkeys.TokenSigningKey, &k.tokenSigningKey),
		symmetric(signingkeys.StateSigningKey, &k.stateSigningKey),
		symmetric(signingkeys.StateEncryptionKey, &k.stateEncryptionKey),
	} {
		if err := c.ensureKeySecret(ctx, want); err != nil {
			return nil, fmt.Errorf("FederationDomain %s/%s: %w", fd.Namespace, fd.Name, err)
		}
	}
	k.secrets = configv1alpha1.FederationDomainSecrets{
		JWKS:               corev1.LocalObjectReference{Name: jwksSecret.name},
		TokenSigningKey:    corev1.LocalObjectReference{Name: signingkeys.TokenSigningKey.SecretName(uid)},
		StateSigningKey:    corev1.LocalObjectReference{Name: signingkeys.StateSigningKey.SecretName(uid)},
		StateEncryptionKey: corev1.LocalObjectReference{Name: signingkeys.StateEncryptionKey.SecretName(uid)},
	}
	return &k, nil
}

// ensureCSRFKey makes sure the Supervisor-wide CSRF cookie key Secret exists and is readable,
// owned (not controlled, as upstream's) by the Supervisor's Deployment when there is one, and
// returns the key.
func (c *Controller) ensureCSRFKey(ctx context.Context) ([]byte, error) {
	owner, err := c.deploymentOwner(ctx)
	if err != nil {
		return nil, err
	}
	var key []byte
	err = c.ensureKeySecret(ctx, keySecret{
		name: signingkeys.CSRFKeySecretName(c.cfg.DeploymentName), typ: signingkeys.CSRFSigningKey.Type, owner: owner,
		generate: signingkeys.CSRFSigningKey.New,
		parse: func(data map[string][]byte) (err error) {
			key, err = signingkeys.CSRFSigningKey.Parse(data)
			return err
		},
	})
	if err != nil {
		return nil, fmt.Errorf("the CSRF cookie key: %w", err)
	}
	return key, nil
}

// deploymentOwner returns the owner reference to the Supervisor's Deployment, or nil when it
// runs outside one. It reads the Deployment once: its replicas, this one included, live no
// longer than it does, and so an idle sync makes no API call.
func (c *Controller) deploymentOwner(ctx context.Context) (*metav1.OwnerReference, error) {
	if c.deploymentRead {
		return c.deployment, nil
	}
	d, err := c.kube.AppsV1().Deployments(c.cfg.Namespace).Get(ctx, c.cfg.DeploymentName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.deployment = nil
	case err != nil:
		return nil, fmt.Errorf("reading the Supervisor's Deployment %s: %w", c.cfg.DeploymentName, err)
	default:
		c.deployment = &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(false)}
	}
	c.deploymentRead = true
	return c.deployment, nil
}

func (c *Controller) ensureKeySecret(ctx context.Context, want keySecret) error {
	existing, err := c.secrets.Get(want.name)
	switch {
	case apierrors.IsNotFound(err):
		return c.createKeySecret(ctx, want)
	case err != nil:
		return err
	case existing.Type != want.typ:
		// Not one of ours: a user's Secret is never overwritten.
		return fmt.Errorf("the Secret %s exists with type %q instead of %q; delete it so that the key can be generated", want.name, existing.Type, want.typ)
	case ownedBy(existing, want.owner) && want.parse(existing.Data) == nil:
		want.noteGenerated(existing)
		return nil
	}
	data, err := want.generate()
	if err != nil {
		return err
	}
	updated := existing.DeepCopy()
	updated.Data = data
	if want.owner != nil {
		updated.OwnerReferences = []metav1.OwnerReference{*want.owner}
	}
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	maps.Copy(updated.Labels, c.cfg.Labels)
	updated.Annotations = want.annotate(updated.Annotations)
	if _, err := c.kube.CoreV1().Secrets(c.cfg.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("replacing the unusable key in Secret %s: %w", want.name, err)
	}
	klog.FromContext(ctx).Info("replaced an unusable key", "secret", want.name)
	want.noteGenerated(updated)
	return want.parse(data)
}

func (c *Controller) createKeySecret(ctx context.Context, want keySecret) error {
	data, err := want.generate()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: want.name, Namespace: c.cfg.Namespace, Labels: maps.Clone(c.cfg.Labels), Annotations: want.annotate(nil)},
		Type:       want.typ,
		Data:       data,
	}
	if want.owner != nil {
		secret.OwnerReferences = []metav1.OwnerReference{*want.owner}
	}
	_, err = c.kube.CoreV1().Secrets(c.cfg.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Another replica (or our stale cache) got there first: use what is stored.
		live, getErr := c.kube.CoreV1().Secrets(c.cfg.Namespace).Get(ctx, want.name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if live.Type == want.typ && ownedBy(live, want.owner) && want.parse(live.Data) == nil {
			want.noteGenerated(live)
			return nil
		}
		return fmt.Errorf("the Secret %s was created meanwhile and is not usable yet; will retry", want.name)
	}
	if err != nil {
		return fmt.Errorf("creating Secret %s: %w", want.name, err)
	}
	klog.FromContext(ctx).Info("generated a key", "secret", want.name)
	want.noteGenerated(secret)
	return want.parse(data)
}

// annotate returns annotations (a copy) recording that the key was generated now, for a key whose
// age is reported; the others' Secrets stay exactly as upstream writes them.
func (want keySecret) annotate(annotations map[string]string) map[string]string {
	if want.generated == nil {
		return annotations
	}
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[signingkeys.GeneratedAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
	return out
}

// noteGenerated hands want.generated the time the key in secret was generated: its annotation, or
// for a Secret written before the annotation existed, the Secret's creation (keys were replaced in
// place only when unreadable, so that is the key's time but for those rare cases).
func (want keySecret) noteGenerated(secret *corev1.Secret) {
	if want.generated == nil {
		return
	}
	if t, err := time.Parse(time.RFC3339, secret.Annotations[signingkeys.GeneratedAtAnnotation]); err == nil {
		*want.generated = t
		return
	}
	*want.generated = secret.CreationTimestamp.Time
}

// ownerReference makes fd the controller of a key Secret, so that deleting fd deletes its keys.
// As upstream's, it blocks fd's foreground deletion until the keys are gone.
func (c *Controller) ownerReference(fd *configv1alpha1.FederationDomain) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         c.fdAPIVersion,
		Kind:               "FederationDomain",
		Name:               fd.Name,
		UID:                fd.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// ownedBy reports whether secret has owner (nil: any or none) as owner, controller or not alike.
func ownedBy(secret *corev1.Secret, owner *metav1.OwnerReference) bool {
	if owner == nil {
		return true
	}
	for _, ref := range secret.OwnerReferences {
		if ref.UID == owner.UID && ptr.Deref(ref.Controller, false) == ptr.Deref(owner.Controller, false) {
			return true
		}
	}
	return false
}
