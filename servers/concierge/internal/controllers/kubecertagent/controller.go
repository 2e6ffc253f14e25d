// Package kubecertagent runs the KubeClusterSigningCertificate strategy: it reads the cluster's
// signing certificate and key, which kube-controller-manager signs client certificates with, so
// that the Concierge can issue client certificates the API server trusts.
//
// The key lives in a file on the node of the kube-controller-manager pod. The controller runs an
// agent Deployment pinned to that node, with that pod's volumes, whose container only sleeps; it
// then execs `pinniped-concierge-kube-cert-agent print` in the agent pod, loads the pair into the
// signer, and records the outcome in the CredentialIssuer's status, together with the API server's
// address and CA from kube-public/cluster-info for clients. A key once loaded is kept when later
// attempts fail. On clusters whose control plane is hidden (GKE, AKS, EKS) there is no
// kube-controller-manager pod, and the strategy reports an error that is expected there.
//
// While the CertificateSigningRequest strategy is enabled (the CredentialIssuer's
// spec.certificateSigningRequest.mode), the agent does not run: its Deployment is deleted, the
// pair is dropped from the signer, and the strategy reports Disabled. Enabling that strategy is
// how an administrator asks for no pod to read the signing key.
package kubecertagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	appsv1informers "k8s.io/client-go/informers/apps/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/core/controller"
	configinformers "sealion.dev/core/generated/concierge/informers/externalversions/config/v1alpha1"
	"sealion.dev/servers/concierge/internal/clusterinfo"
	"sealion.dev/servers/concierge/internal/credentialissuer"
	"sealion.dev/servers/internal/leaderelection"
)

const (
	// keyCacheTTL is how long a pair read from one agent pod is trusted before it is read again, so
	// that a rotated key is picked up without exec'ing on every resync.
	keyCacheTTL = 15 * time.Minute
	// resyncInterval bounds how stale the strategy can be: the cluster-info ConfigMap is not
	// watched, and the key cache expires.
	resyncInterval = time.Minute
	execTimeout    = 30 * time.Second
)

// Config is the agent's configuration.
type Config struct {
	// CredentialIssuer names the Concierge's CredentialIssuer, whose spec may turn the agent off.
	CredentialIssuer string
	// Namespace is the Concierge's namespace, where the agent runs.
	Namespace          string
	DeploymentName     string
	ServiceAccountName string
	// Image runs the agent; when empty, the image of the Concierge's first container in its own
	// pod OwnPodName, which ships the agent binary.
	Image             string
	OwnPodName        string
	ImagePullSecrets  []string
	PriorityClassName string
	// Labels go on the Deployment and, except app, on its pods.
	Labels map[string]string
	// RunAsUser and RunAsGroup are the agent pod's; root when nil.
	RunAsUser, RunAsGroup *int64
	// DeploymentStrategy is the agent Deployment's strategy type; the API's default when empty.
	DeploymentStrategy appsv1.DeploymentStrategyType
	// DiscoveryURL, when set, is the API server address advertised to clients instead of the
	// one in kube-public/cluster-info; the CA is still that ConfigMap's.
	DiscoveryURL string
}

// Signer takes the cluster signing pair, and forgets it; a *dynamicca.Signer.
type Signer interface {
	Set(certPEM, keyPEM []byte) error
	Clear()
}

// Executor runs a command in a container and returns its standard output.
type Executor interface {
	Exec(ctx context.Context, namespace, pod, container string, command ...string) ([]byte, error)
}

// StrategyWriter records the strategy in the CredentialIssuer; a *credentialissuer.Updater.
type StrategyWriter interface {
	SetStrategy(ctx context.Context, s configv1alpha1.CredentialIssuerStrategy) error
}

// Informers are what the controller watches.
type Informers struct {
	// ControllerManagerPods are pods in kube-system; listing is filtered by ControllerManagerLabel
	// in any case, so the informer may be restricted to those.
	ControllerManagerPods corev1informers.PodInformer
	// Nodes tell which kube-controller-manager pods run on schedulable nodes.
	Nodes corev1informers.NodeInformer
	// Pods and Deployments are those of the Concierge's namespace.
	Pods              corev1informers.PodInformer
	Deployments       appsv1informers.DeploymentInformer
	CredentialIssuers configinformers.CredentialIssuerInformer
}

// Controller runs the agent and loads the signing pair. It reconciles the strategy as a whole:
// every event leads to one sync of its single key.
type Controller struct {
	*controller.Controller
	cfg       Config
	client    kubernetes.Interface
	informers Informers
	exec      Executor
	signer    Signer
	status    StrategyWriter

	// loaded holds the UIDs of the agent pods whose pair is in the signer.
	loaded *utilcache.Expiring
	// signing is set once a pair is in the signer; pending while the last sync found the agent
	// on its way (see Synced).
	signing, pending atomic.Bool
}

// Synced reports whether the replica may serve: its first sync is done, and it has a signing
// pair unless no agent is on its way. A replica that starts while the agent pod is replaced (an
// upgrade changes the agent's image with the Concierge's) would otherwise be ready with nothing
// to sign with, and a rolling update would take away the replicas that have a pair: every
// exchange sent to it failed. An agent that cannot start is not waited for (the strategy reports
// why, and the impersonation proxy may serve instead).
func (c *Controller) Synced() bool {
	return c.Controller.Synced() && (c.signing.Load() || !c.pending.Load())
}

// New returns a controller; start the informers and call Run.
func New(cfg Config, client kubernetes.Interface, informers Informers, exec Executor, signer Signer, status StrategyWriter) *Controller {
	return newController(cfg, client, informers, exec, signer, status, clock.RealClock{})
}

// newController is New with the clock of the key cache, the resync and the backoff.
func newController(cfg Config, client kubernetes.Interface, informers Informers, exec Executor, signer Signer, status StrategyWriter, clk clock.WithTicker) *Controller {
	c := &Controller{
		cfg: cfg, client: client, informers: informers, exec: exec, signer: signer, status: status,
		loaded: utilcache.NewExpiringWithClock(clk),
	}
	c.Controller = controller.New(controller.Options{
		Name:   "kube-cert-agent",
		Sync:   func(ctx context.Context, _ string) error { return c.sync(ctx) },
		Resync: resyncInterval,
		// The resync syncs a failing strategy too, so the backoff spaces retries only up to it.
		MinBackoff: time.Second,
		MaxBackoff: 5 * time.Minute,
		Clock:      clk,
	})
	for _, inf := range []cache.SharedIndexInformer{
		informers.ControllerManagerPods.Informer(), informers.Pods.Informer(),
		informers.Deployments.Informer(), informers.CredentialIssuers.Informer(),
	} {
		c.Watch(inf, controller.AsSingleton)
	}
	// Nodes are only consulted, not watched for events: their status updates are frequent and
	// rarely matter here.
	c.WaitFor(informers.Nodes.Informer())
	return c
}

// sync runs one reconciliation and records its outcome. An error asks for a retry with backoff;
// states that an event will end (a pod not running yet) return nil and wait for that event.
func (c *Controller) sync(ctx context.Context) error {
	legacyErr := c.deleteLegacyPods(ctx)
	var strategy configv1alpha1.CredentialIssuerStrategy
	var err error
	if credentialissuer.CertificateSigningRequestMode(c.informers.CredentialIssuers.Lister(), c.cfg.CredentialIssuer) == configv1alpha1.CertificateSigningRequestModeEnabled {
		strategy, err = c.standDown(ctx)
	} else {
		strategy, err = c.reconcile(ctx)
	}
	c.pending.Store(strategy.Reason == configv1alpha1.StrategyReasonPending)
	strategy.Type = configv1alpha1.StrategyTypeKubeClusterSigningCertificate
	if werr := c.status.SetStrategy(ctx, strategy); werr != nil {
		return errors.Join(legacyErr, err, werr)
	}
	return errors.Join(legacyErr, err)
}

// LegacyAgentLabelValue marks the bare agent pods that Pinniped v0.7.0 and older created, with no
// Deployment to remove them: the Concierge that replaces such an install deletes them.
const LegacyAgentLabelValue = "true"

// deleteLegacyPods deletes the legacy agent pods of this install: those labelled
// kube-cert-agent.pinniped.dev=true and with every configured label, as upstream selects them. The
// delete is conditional on the pod seen, so a pod replaced meanwhile is left alone.
func (c *Controller) deleteLegacyPods(ctx context.Context) error {
	set := labels.Set{}
	for k, v := range c.cfg.Labels {
		set[k] = v
	}
	set[AgentLabelKey] = LegacyAgentLabelValue
	legacy, err := c.informers.Pods.Lister().Pods(c.cfg.Namespace).List(labels.SelectorFromSet(set))
	if err != nil {
		return wrap(err, "could not list legacy agent pods")
	}
	var errs []error
	for _, pod := range legacy {
		err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pod.UID, ResourceVersion: &pod.ResourceVersion},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, wrap(err, "could not delete legacy agent pod %s/%s", pod.Namespace, pod.Name))
			continue
		}
		klog.FromContext(ctx).Info("deleted legacy kube-cert-agent pod", "pod", klog.KObj(pod))
	}
	return errors.Join(errs...)
}

// standDown stops the agent while the CertificateSigningRequest strategy is enabled: every replica
// forgets the pair, and the leader deletes the agent Deployment (its pods follow).
func (c *Controller) standDown(ctx context.Context) (configv1alpha1.CredentialIssuerStrategy, error) {
	c.signer.Clear()
	c.signing.Store(false)
	disabled := configv1alpha1.CredentialIssuerStrategy{
		Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonDisabled,
		Message: "not run: the CertificateSigningRequest strategy is enabled (spec.certificateSigningRequest.mode), " +
			"so no pod reads the cluster's signing key",
	}
	existing, err := c.informers.Deployments.Lister().Deployments(c.cfg.Namespace).Get(c.cfg.DeploymentName)
	if apierrors.IsNotFound(err) {
		return disabled, nil
	}
	if err != nil {
		return disabled, err
	}
	err = c.client.AppsV1().Deployments(existing.Namespace).Delete(ctx, existing.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &existing.UID},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && !errors.Is(err, leaderelection.ErrNotLeader) {
		return disabled, wrap(err, "deleting the agent Deployment %s/%s", existing.Namespace, existing.Name)
	}
	if err == nil {
		klog.FromContext(ctx).Info("deleted the agent Deployment: the CertificateSigningRequest strategy is enabled", "deployment", klog.KObj(existing))
	}
	return disabled, nil
}

func (c *Controller) reconcile(ctx context.Context) (configv1alpha1.CredentialIssuerStrategy, error) {
	kcm, err := c.controllerManagerPod()
	if err != nil {
		return failed(configv1alpha1.StrategyReasonCouldNotFetchKey, err), nil
	}
	image, err := c.image()
	if err != nil {
		return failed(configv1alpha1.StrategyReasonCouldNotFetchKey, err), nil
	}
	// Only the leader writes the agent Deployment. Another replica loads the key from the agent
	// that runs, even one of another image: during an upgrade the leader may be an older replica,
	// and a new one that waited for the agent of its own image would serve without a key.
	if err := c.ensureDeployment(ctx, newDeployment(c.cfg, image, kcm)); err != nil && !errors.Is(err, leaderelection.ErrNotLeader) {
		return failed(configv1alpha1.StrategyReasonCouldNotFetchKey, err), err
	}
	agent, err := c.agentPod(kcm.Spec.NodeName)
	if errors.As(err, new(pendingError)) {
		return failed(configv1alpha1.StrategyReasonPending, err), nil
	}
	if err != nil {
		return failed(configv1alpha1.StrategyReasonCouldNotFetchKey, err), nil
	}
	if err := c.loadKey(ctx, agent); err != nil {
		return failed(configv1alpha1.StrategyReasonCouldNotFetchKey, err), err
	}
	info, err := clusterinfo.Read(ctx, c.client)
	if err != nil {
		var retry error
		if !errors.As(err, new(clusterinfo.UnusableError)) {
			retry = err
		}
		return failed(configv1alpha1.StrategyReasonCouldNotGetClusterInfo, fmt.Errorf(
			"the cluster signing key was loaded, but %w; the cluster was probably not built by kubeadm. "+
				"TokenCredentialRequests still work: give the CLI the API server's endpoint and CA "+
				"(pinniped get kubeconfig --concierge-endpoint and --concierge-ca-bundle)", err)), retry
	}
	if c.cfg.DiscoveryURL != "" {
		info.Server = c.cfg.DiscoveryURL
	}
	return configv1alpha1.CredentialIssuerStrategy{
		Status:  configv1alpha1.StrategyStatusSuccess,
		Reason:  configv1alpha1.StrategyReasonFetchedKey,
		Message: "key was fetched successfully",
		Frontend: &configv1alpha1.CredentialIssuerFrontend{
			Type:                          configv1alpha1.FrontendTypeTokenCredentialRequestAPI,
			TokenCredentialRequestAPIInfo: info,
		},
	}, nil
}

func failed(reason configv1alpha1.StrategyReason, err error) configv1alpha1.CredentialIssuerStrategy {
	return configv1alpha1.CredentialIssuerStrategy{
		Status: configv1alpha1.StrategyStatusError, Reason: reason, Message: err.Error(),
	}
}

// controllerManagerPod returns the newest running kube-controller-manager pod, preferring those on
// schedulable nodes: a cordoned node is likely to be drained, taking the agent with it.
func (c *Controller) controllerManagerPod() (*corev1.Pod, error) {
	selector, err := labels.Parse(ControllerManagerLabel)
	if err != nil {
		return nil, err
	}
	all, err := c.informers.ControllerManagerPods.Lister().Pods(ControllerManagerNamespace).List(selector)
	if err != nil {
		return nil, err
	}
	var running []*corev1.Pod
	for _, p := range all {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			running = append(running, p)
		}
	}
	if len(running) == 0 {
		return nil, fmt.Errorf("could not find a running kube-controller-manager pod (pods in %s labelled %s: %d, running: 0); "+
			"this is expected on clusters whose control plane the provider hides, such as GKE, AKS and EKS, "+
			"where the impersonation proxy strategy is the one to use",
			ControllerManagerNamespace, ControllerManagerLabel, len(all))
	}
	schedulable := func(p *corev1.Pod) bool {
		node, err := c.informers.Nodes.Lister().Get(p.Spec.NodeName)
		return err == nil && !node.Spec.Unschedulable
	}
	slices.SortFunc(running, func(a, b *corev1.Pod) int {
		if sa, sb := schedulable(a), schedulable(b); sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		return newestFirst(a, b)
	})
	return running[0], nil
}

// newestFirst orders pods by creation time, newest first, then by name for a stable choice.
func newestFirst(a, b *corev1.Pod) int {
	if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// image returns the agent's image: configured, or the Concierge's own.
func (c *Controller) image() (string, error) {
	if c.cfg.Image != "" {
		return c.cfg.Image, nil
	}
	if c.cfg.OwnPodName == "" {
		return "", errors.New("no agent image is configured (kubeCertAgent.image) and the Concierge's own pod is unknown (POD_NAME), so its image cannot be used")
	}
	pod, err := c.informers.Pods.Lister().Pods(c.cfg.Namespace).Get(c.cfg.OwnPodName)
	if err != nil {
		return "", fmt.Errorf("could not read the Concierge's own pod %s/%s for the agent's image: %w", c.cfg.Namespace, c.cfg.OwnPodName, err)
	}
	if len(pod.Spec.Containers) == 0 || pod.Spec.Containers[0].Image == "" {
		return "", fmt.Errorf("the Concierge's own pod %s/%s names no image", c.cfg.Namespace, c.cfg.OwnPodName)
	}
	return pod.Spec.Containers[0].Image, nil
}

// ensureDeployment creates the agent Deployment or brings it to desired.
func (c *Controller) ensureDeployment(ctx context.Context, desired *appsv1.Deployment) error {
	deployments := c.client.AppsV1().Deployments(desired.Namespace)
	existing, err := c.informers.Deployments.Lister().Deployments(desired.Namespace).Get(desired.Name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = deployments.Create(ctx, desired, metav1.CreateOptions{})
		return wrap(err, "creating the agent Deployment %s/%s", desired.Namespace, desired.Name)
	case err != nil:
		return err
	case !equality.Semantic.DeepEqual(existing.Spec.Selector, desired.Spec.Selector):
		// A selector cannot change: replace the Deployment. Background deletion removes the object
		// at once (its ReplicaSets and pods follow), so it can be created again right away. A
		// conflict or an existing object means the informer is behind a replacement already made;
		// the next sync compares again.
		err := deployments.Delete(ctx, existing.Name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &existing.UID},
			PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return wrap(err, "deleting the agent Deployment %s/%s to change its selector", existing.Namespace, existing.Name)
		}
		_, err = deployments.Create(ctx, desired, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return wrap(err, "creating the agent Deployment %s/%s", desired.Namespace, desired.Name)
	}
	// The API server fills in defaults, so compare only what desired sets; the hash catches what
	// that comparison cannot see, such as a volume the kube-controller-manager pod no longer has.
	if existing.Annotations[specHashAnnotation] == desired.Annotations[specHashAnnotation] &&
		equality.Semantic.DeepDerivative(desired.Spec, existing.Spec) &&
		equality.Semantic.DeepDerivative(desired.Labels, existing.Labels) {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = desired.Labels
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[specHashAnnotation] = desired.Annotations[specHashAnnotation]
	updated.Spec = desired.Spec
	_, err = deployments.Update(ctx, updated, metav1.UpdateOptions{})
	return wrap(err, "updating the agent Deployment %s/%s", desired.Namespace, desired.Name)
}

func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// pendingError says the agent is on its way: its Deployment was just made or its pod is starting.
// The strategy then reports Pending, which clients such as `pinniped get kubeconfig` wait out
// instead of failing in the minute after an install.
type pendingError struct{ error }

// agentPod returns the newest running agent pod on node. When there is none, the error is a
// pendingError unless something shows the pod will not start without help.
func (c *Controller) agentPod(node string) (*corev1.Pod, error) {
	pods, err := c.informers.Pods.Lister().Pods(c.cfg.Namespace).List(labels.SelectorFromSet(labels.Set{AgentLabelKey: AgentLabelValue}))
	if err != nil {
		return nil, err
	}
	var running, here []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName != node {
			continue
		}
		here = append(here, p)
		if p.Status.Phase == corev1.PodRunning {
			running = append(running, p)
		}
	}
	if len(running) == 0 {
		what := fmt.Sprintf("running pod of the agent Deployment %s/%s on node %s (agent pods: %d)",
			c.cfg.Namespace, c.cfg.DeploymentName, node, len(pods))
		if why := c.agentStuck(here); why != "" {
			return nil, fmt.Errorf("no %s: %s", what, why)
		}
		return nil, pendingError{fmt.Errorf("waiting for a %s", what)}
	}
	slices.SortFunc(running, newestFirst)
	return running[0], nil
}

// startingReasons are the waiting reasons of a container on its way to running; any other (an
// image that cannot be pulled, a crash loop, a bad config) needs someone to act.
var startingReasons = map[string]bool{"": true, "ContainerCreating": true, "PodInitializing": true}

// agentStuck says why the agent will not run without help, or "" when it is still starting: its
// Deployment cannot create pods or has passed its progress deadline, or one of pods (those on the
// agent's node) failed or has a container that cannot start.
func (c *Controller) agentStuck(pods []*corev1.Pod) string {
	if d, err := c.informers.Deployments.Lister().Deployments(c.cfg.Namespace).Get(c.cfg.DeploymentName); err == nil {
		for _, cond := range d.Status.Conditions {
			if (cond.Type == appsv1.DeploymentReplicaFailure && cond.Status == corev1.ConditionTrue) ||
				(cond.Type == appsv1.DeploymentProgressing && cond.Status == corev1.ConditionFalse) {
				return fmt.Sprintf("the Deployment reports %s=%s: %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
			}
		}
	}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodFailed {
			return fmt.Sprintf("pod %s failed: %s: %s", p.Name, p.Status.Reason, p.Status.Message)
		}
		// Concat, not append: the statuses belong to the informer's cache.
		for _, s := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if w := s.State.Waiting; w != nil && !startingReasons[w.Reason] {
				return fmt.Sprintf("pod %s: container %s is waiting: %s: %s", p.Name, s.Name, w.Reason, w.Message)
			}
		}
	}
	return ""
}

// loadKey reads the signing pair in pod and hands it to the signer, unless it did so from the
// same pod within keyCacheTTL.
func (c *Controller) loadKey(ctx context.Context, pod *corev1.Pod) error {
	if _, ok := c.loaded.Get(pod.UID); ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	out, err := c.exec.Exec(ctx, pod.Namespace, pod.Name, ContainerName, AgentCommand, "print")
	if err != nil {
		return fmt.Errorf("could not exec into the agent pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	// The output holds the private key: errors must not quote it.
	var pair struct {
		Cert []byte `json:"tls.crt"`
		Key  []byte `json:"tls.key"`
	}
	if err := json.Unmarshal(out, &pair); err != nil || len(pair.Cert) == 0 || len(pair.Key) == 0 {
		return fmt.Errorf("the agent pod %s/%s did not print a JSON object with base64 tls.crt and tls.key", pod.Namespace, pod.Name)
	}
	if err := c.signer.Set(pair.Cert, pair.Key); err != nil {
		return fmt.Errorf("the files the agent pod %s/%s read are not a usable signing pair: %w", pod.Namespace, pod.Name, err)
	}
	c.loaded.Set(pod.UID, struct{}{}, keyCacheTTL)
	c.signing.Store(true)
	klog.FromContext(ctx).Info("loaded the cluster signing key", "pod", klog.KObj(pod))
	return nil
}
