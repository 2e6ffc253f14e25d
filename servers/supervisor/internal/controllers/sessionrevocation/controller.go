// Package sessionrevocation runs the Supervisor's SessionRevocation controller. The token
// endpoints refuse the sessions a SessionRevocation matches from the moment their replica's
// informer sees it (revocations.Checker); this controller, on the replica that leads, then ends
// the stored sessions it matches once per generation of the object: it deletes their records,
// revokes their upstream refresh tokens (sessions.Storage.EndSessions), writes a "Session Revoked
// By Administrator" audit event for each, and counts them in the status.
package sessionrevocation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/core/controller"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	configinformers "sealion.dev/core/generated/supervisor/informers/externalversions/config/v1alpha1"
	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/revocations"
)

// Resync is how often every SessionRevocation is looked at again without an event: a replica that
// becomes the leader takes over the revocations the last one had not finished within it.
const Resync = 30 * time.Second

// Informers are what the controller watches, all of the Supervisor's namespace.
type Informers struct {
	SessionRevocations configinformers.SessionRevocationInformer
	FederationDomains  configinformers.FederationDomainInformer
}

// Sessions ends stored sessions; sessions.Storage implements it.
type Sessions interface {
	EndSessions(ctx context.Context, match func(*sessions.Session) bool) ([]sessions.EndedSession, error)
}

// Config is what the controller needs besides its informers.
type Config struct {
	Namespace string
	// Supervisor writes the status; it must speak the configured API group suffix.
	Supervisor supervisorclientset.Interface
	Sessions   Sessions
	// Leading reports whether this replica leads: only the leader ends stored sessions.
	Leading func() bool
	Audit   *audit.Logger
}

// Controller ends the stored sessions of SessionRevocations. Make one with New and start it with
// Run.
type Controller struct {
	*controller.Controller
	cfg               Config
	revocations       configlisters.SessionRevocationNamespaceLister
	federationDomains configlisters.FederationDomainNamespaceLister
}

// New returns the SessionRevocation controller of cfg.Namespace.
func New(cfg Config, informers Informers) *Controller {
	c := &Controller{
		cfg:               cfg,
		revocations:       informers.SessionRevocations.Lister().SessionRevocations(cfg.Namespace),
		federationDomains: informers.FederationDomains.Lister().FederationDomains(cfg.Namespace),
	}
	c.Controller = controller.New(controller.Options{Name: "session-revocation", Sync: c.sync, Keys: c.names, Resync: Resync})
	c.Watch(informers.SessionRevocations.Informer(), controller.ObjectName)
	// A FederationDomain created or deleted changes FederationDomainFound; there are few.
	c.Watch(informers.FederationDomains.Informer(), c.All)
	return c
}

func (c *Controller) names() ([]string, error) {
	revs, err := c.revocations.List(labels.Everything())
	names := make([]string, 0, len(revs))
	for _, rev := range revs {
		names = append(names, rev.Name)
	}
	return names, err
}

// sync ends the stored sessions of one SessionRevocation, unless its current generation's were
// ended already, and writes its status.
func (c *Controller) sync(ctx context.Context, name string) error {
	if !c.cfg.Leading() {
		return nil // the leader does it; the resync brings it here if this replica leads later
	}
	rev, err := c.revocations.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	status := *rev.Status.DeepCopy()
	meta.RemoveStatusCondition(&status.Conditions, configv1alpha1.ConditionFederationDomainFound)
	if fd := rev.Spec.FederationDomainName; fd != "" {
		meta.SetStatusCondition(&status.Conditions, c.federationDomainFound(rev, fd))
	}
	var endErr error
	if done := meta.FindStatusCondition(status.Conditions, configv1alpha1.ConditionSessionsRevoked); done == nil ||
		done.Status != metav1.ConditionTrue || done.ObservedGeneration != rev.Generation {
		var ended []sessions.EndedSession
		ended, endErr = c.cfg.Sessions.EndSessions(ctx, func(s *sessions.Session) bool {
			return revocations.Matches(rev, s.Custom.FederationDomain, s)
		})
		for _, e := range ended {
			c.cfg.Audit.Event(ctx, "Session Revoked By Administrator",
				audit.Fields{SessionID: e.RequestID, PersonalInfo: []any{"username", e.Username}},
				"sessionRevocation", rev.Name, "reason", rev.Spec.Reason)
		}
		status.RevokedSessions += int64(len(ended))
		meta.SetStatusCondition(&status.Conditions, sessionsRevoked(rev, len(ended), endErr))
	}
	slices.SortStableFunc(status.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	status.Phase = phase(status.Conditions)
	if err := c.writeStatus(ctx, rev, status); err != nil {
		return err
	}
	return endErr
}

func (c *Controller) federationDomainFound(rev *configv1alpha1.SessionRevocation, fd string) metav1.Condition {
	cond := metav1.Condition{Type: configv1alpha1.ConditionFederationDomainFound, ObservedGeneration: rev.Generation,
		Status: metav1.ConditionTrue, Reason: configv1alpha1.ReasonSuccess, Message: fmt.Sprintf("FederationDomain %q exists", fd)}
	if _, err := c.federationDomains.Get(fd); err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, configv1alpha1.ReasonFederationDomainNotFound
		cond.Message = fmt.Sprintf("no FederationDomain %q in this namespace: no session of it is ended until one is created", fd)
	}
	return cond
}

// sessionsRevoked is the SessionsRevoked condition after ending n sessions, with err when some
// could not be.
func sessionsRevoked(rev *configv1alpha1.SessionRevocation, n int, err error) metav1.Condition {
	cond := metav1.Condition{Type: configv1alpha1.ConditionSessionsRevoked, ObservedGeneration: rev.Generation,
		Status: metav1.ConditionTrue, Reason: configv1alpha1.ReasonSuccess,
		Message: fmt.Sprintf("ended the %d stored sessions this generation matched; matching sessions are refused for as long as this object exists", n)}
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, configv1alpha1.ReasonRevocationFailed
		cond.Message = fmt.Sprintf("ended %d stored sessions, and is retrying the rest (they are refused meanwhile): %v", n, err)
	}
	return cond
}

func phase(conditions []metav1.Condition) configv1alpha1.Phase {
	for _, cond := range conditions {
		if cond.Status != metav1.ConditionTrue {
			return configv1alpha1.PhaseError
		}
	}
	return configv1alpha1.PhaseReady
}

// writeStatus updates rev's status when it differs from status.
func (c *Controller) writeStatus(ctx context.Context, rev *configv1alpha1.SessionRevocation, status configv1alpha1.SessionRevocationStatus) error {
	if equality.Semantic.DeepEqual(rev.Status, status) {
		return nil
	}
	updated := rev.DeepCopy()
	updated.Status = status
	_, err := c.cfg.Supervisor.ConfigV1alpha1().SessionRevocations(rev.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		// A conflict too. The retry finds the sessions this pass ended gone, and so does not
		// count them: revokedSessions may fall short, never over.
		return fmt.Errorf("updating the status of SessionRevocation %s: %w", rev.Name, err)
	}
	klog.FromContext(ctx).V(1).Info("updated the status of a SessionRevocation", "name", rev.Name, "phase", status.Phase, "revokedSessions", status.RevokedSessions)
	return nil
}
