// Package ingress is the Ingress controller of the simulated managed clusters' talos-like
// profile. It stands in for ingress-nginx with TLS passthrough, the way a published setup of
// Pinniped on a Talos cluster exposed the Concierge's impersonation proxy: a ClusterIP Service
// behind an Ingress that passes TLS through untouched, so the proxy keeps its own certificate and
// sees the client's. On a single machine there is no cloud load balancer in front of the
// ingress controller, so the controller itself listens on one address of this machine
// (DefaultAddress, on loopback) for every Ingress.
//
// At Run it ensures the IngressClass ClassName (spec.controller ControllerName), marked as the
// default class. It serves the Ingresses of that class (spec.ingressClassName, or the legacy
// kubernetes.io/ingress.class annotation, or no class while ClassName is the default) that carry
// ingress-nginx's annotation PassthroughAnnotation: "true", so YAML written for ingress-nginx
// works unchanged. An Ingress of the class without it gets a Warning Event and is not routed:
// passthrough is all this controller does. Each connection is routed by the server name (SNI)
// of its TLS ClientHello: to the rule whose host equals it, or whose wildcard host "*.domain"
// covers it, then to the rule's Service port (the first path's backend; the default backend for a
// rule without paths), round robin over the Service's ready endpoints read from its
// EndpointSlices (pod IPs on the CNI bridge are reachable from the host). The ClientHello is
// replayed to the endpoint, and the bytes are relayed both ways until either side closes.
// Connections without a server name, or naming no routed host, are closed.
//
// Every routed Ingress gets the listener's IP in status.loadBalancer.ingress, and a marked block
// of the hosts file maps each routed host (wildcards aside) to that IP, so that clients on this
// machine resolve it. An Ingress that stops being routed loses the IP from its status. When the
// controller stops it closes the listener and every relayed connection and removes its hosts
// block, but leaves statuses alone, as a controller being restarted does.
package ingress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"sealion.dev/providers/internal/hostsblock"
	"sealion.dev/providers/managed/internal/tcprelay"
)

// component names the controller in Events and logs.
const component = "sealion-ingress"

// Normal Event reasons.
const (
	reasonRouted   = "Routed"
	reasonReleased = "Released"
)

// defaultClassAnnotation marks the IngressClass of Ingresses that name none.
const defaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"

// helloTimeout bounds the wait for a client's ClientHello; after it, connections have no timeout.
const helloTimeout = 10 * time.Second

// syncKey is the only work item: hosts can move between Ingresses, and the hosts block covers all
// of them, so every change re-plans everything.
const syncKey = "all"

// Controller routes TLS connections to the backends of passthrough Ingresses. Create it with New
// and call Run once.
type Controller struct {
	cfg       Config
	client    kubernetes.Interface
	factory   informers.SharedInformerFactory
	ingresses networkinglisters.IngressLister
	classes   networkinglisters.IngressClassLister
	services  corelisters.ServiceLister
	slices    discoverylisters.EndpointSliceLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	hosts     hostsblock.File
	recorder  record.EventRecorder // set by Run
	logger    klog.Logger          // set by Run

	table atomic.Pointer[table] // read by every connection, replaced by sync

	// Touched by the single worker only.
	endpoints map[string]*tcprelay.Endpoints // by backend key, kept across syncs for round robin
	told      map[string]string              // by Ingress key: the last Event given, to not repeat it
}

// New returns a controller that watches Ingresses, IngressClasses, Services and EndpointSlices
// through client.
func New(client kubernetes.Interface, cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ingresses := factory.Networking().V1().Ingresses()
	classes := factory.Networking().V1().IngressClasses()
	services := factory.Core().V1().Services()
	endpointSlices := factory.Discovery().V1().EndpointSlices()
	c := &Controller{
		cfg:       cfg,
		client:    client,
		factory:   factory,
		ingresses: ingresses.Lister(),
		classes:   classes.Lister(),
		services:  services.Lister(),
		slices:    endpointSlices.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: component}),
		hosts:     hostsFile(cfg.HostsFile),
		logger:    klog.Background(),
		endpoints: map[string]*tcprelay.Endpoints{},
		told:      map[string]string{},
	}
	c.table.Store(&table{})
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(syncKey) },
		UpdateFunc: func(any, any) { c.queue.Add(syncKey) },
		DeleteFunc: func(any) { c.queue.Add(syncKey) },
	}
	for _, informer := range []cache.SharedIndexInformer{ingresses.Informer(), classes.Informer(), services.Informer(), endpointSlices.Informer()} {
		if _, err := informer.AddEventHandler(enqueue); err != nil {
			return nil, fmt.Errorf("ingress: watching: %w", err)
		}
		c.synced = append(c.synced, informer.HasSynced)
	}
	return c, nil
}

// Run ensures the IngressClass, listens, and routes until ctx ends; then it closes the listener
// and every relayed connection and removes its hosts block. The error says what could not be
// started or cleaned up.
func (c *Controller) Run(ctx context.Context) (err error) {
	c.logger = klog.FromContext(ctx).WithValues("controller", component)
	ctx = klog.NewContext(ctx, c.logger)
	defer c.queue.ShutDown()

	if err := c.ensureClass(ctx); err != nil {
		return err
	}
	server, err := tcprelay.Listen(c.logger, c.cfg.Address, c.relay)
	if err != nil {
		return fmt.Errorf("ingress: %w", err)
	}
	defer func() {
		server.Close()
		if hostsErr := c.hosts.Write(nil); hostsErr != nil {
			err = errors.Join(err, fmt.Errorf("ingress: removing the hosts block: %w", hostsErr))
		}
	}()

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	c.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})

	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return nil
	}
	c.logger.Info("controller started", "address", c.cfg.Address, "class", ClassName)
	c.queue.Add(syncKey)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, c.work, time.Second)
	}()
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// ensureClass creates the IngressClass when missing. One that exists is left as it is (whoever
// changed its default marking meant it), unless another controller owns the name.
func (c *Controller) ensureClass(ctx context.Context) error {
	class := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: ClassName, Annotations: map[string]string{defaultClassAnnotation: "true"}},
		Spec:       networkingv1.IngressClassSpec{Controller: ControllerName},
	}
	_, err := c.client.NetworkingV1().IngressClasses().Create(ctx, class, metav1.CreateOptions{})
	switch {
	case err == nil:
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("ingress: creating IngressClass %s: %w", ClassName, err)
	}
	existing, err := c.client.NetworkingV1().IngressClasses().Get(ctx, ClassName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("ingress: reading IngressClass %s: %w", ClassName, err)
	}
	if existing.Spec.Controller != ControllerName {
		return fmt.Errorf("ingress: IngressClass %s belongs to controller %q, not %q", ClassName, existing.Spec.Controller, ControllerName)
	}
	return nil
}

func (c *Controller) work(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		if err := c.sync(ctx); err != nil {
			c.logger.V(2).Info("will retry", "reason", err.Error())
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// sync plans the routes of every Ingress, switches new connections to them, and publishes them in the
// hosts file, the statuses and Events.
func (c *Controller) sync(ctx context.Context) error {
	ingresses, err := c.ingresses.List(labels.Everything())
	if err != nil {
		return err
	}
	p := makePlan(ingresses, c.classIsDefault())
	c.table.Store(c.resolve(p))

	ip := c.cfg.ip()
	entries := map[string]netip.Addr{}
	for host := range p.routes {
		if !strings.HasPrefix(host, "*.") {
			entries[host] = ip
		}
	}
	var errs []error
	if err := c.hosts.Write(entries); err != nil {
		errs = append(errs, err)
	}
	present := map[string]struct{}{}
	for _, ing := range ingresses {
		present[ing.Namespace+"/"+ing.Name] = struct{}{}
		if err := c.publish(ctx, ing, p); err != nil {
			errs = append(errs, err)
		}
	}
	for key := range c.told {
		if _, exists := present[key]; !exists {
			delete(c.told, key)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) classIsDefault() bool {
	class, err := c.classes.Get(ClassName)
	return err == nil && class.Spec.Controller == ControllerName && class.Annotations[defaultClassAnnotation] == "true"
}

// resolve gives every planned host the current endpoints of its backend.
func (c *Controller) resolve(p plan) *table {
	t := table{}
	used := map[string]bool{}
	for host, b := range p.routes {
		key := b.key()
		e, ok := c.endpoints[key]
		if !ok {
			e = tcprelay.NewEndpoints(nil)
			c.endpoints[key] = e
		}
		if !used[key] {
			e.Set(c.readyEndpoints(b))
			used[key] = true
		}
		t[host] = &route{backend: b, endpoints: e}
	}
	for key := range c.endpoints {
		if !used[key] {
			delete(c.endpoints, key)
		}
	}
	return &t
}

// readyEndpoints are the "IP:port" of the backend's ready endpoints; none while its Service or
// port does not exist (yet).
func (c *Controller) readyEndpoints(b backend) []string {
	svc, err := c.services.Services(b.namespace).Get(b.service)
	if err != nil {
		return nil
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		if b.port.Name != "" {
			return p.Name == b.port.Name
		}
		return p.Port == b.port.Number
	})
	if i < 0 {
		return nil
	}
	endpointSlices, err := c.slices.EndpointSlices(b.namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: b.service}))
	if err != nil {
		return nil
	}
	return tcprelay.ReadyEndpoints(endpointSlices)[svc.Spec.Ports[i].Name]
}

// publish gives the Ingress its status and, when what it is told changed, an Event.
func (c *Controller) publish(ctx context.Context, ing *networkingv1.Ingress, p plan) error {
	key, _ := cache.MetaNamespaceKeyFunc(ing)
	ip := c.cfg.ip().String()
	hosts, routed := p.routed[key]

	switch w, warned := p.warnings[key]; {
	case warned:
		c.tell(key, ing, corev1.EventTypeWarning, w.reason, w.message)
	case routed:
		c.tell(key, ing, corev1.EventTypeNormal, reasonRouted, fmt.Sprintf(
			"Routing TLS connections for %s to their backends, passed through from %s", strings.Join(hosts, ", "), c.cfg.Address))
	default:
		delete(c.told, key)
	}

	current := ing.Status.LoadBalancer.Ingress
	want := []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
	if !routed {
		want = slices.DeleteFunc(slices.Clone(current), func(lb networkingv1.IngressLoadBalancerIngress) bool { return lb.IP == ip })
	}
	if equality.Semantic.DeepEqual(want, current) { // nil and empty alike
		return nil
	}
	if len(want) == 0 {
		want = nil
	}
	updated := ing.DeepCopy()
	updated.Status.LoadBalancer.Ingress = want
	if _, err := c.client.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the status of Ingress %s: %w", key, err)
	}
	if !routed {
		c.recorder.Eventf(ing, corev1.EventTypeNormal, reasonReleased, "No longer routed; removed %s from the status", ip)
	}
	return nil
}

// tell records an Event unless the Ingress was last told the same.
func (c *Controller) tell(key string, ing *networkingv1.Ingress, eventType, reason, message string) {
	if c.told[key] == message {
		return
	}
	c.recorder.Event(ing, eventType, reason, message)
	c.told[key] = message
}

// relay routes one client connection by the server name of its ClientHello.
func (c *Controller) relay(client net.Conn) {
	logger := c.logger.WithValues("client", client.RemoteAddr().String())
	_ = client.SetReadDeadline(time.Now().Add(helloTimeout))
	serverName, hello, err := readServerName(client)
	if err != nil {
		logger.V(2).Info("closing a connection", "reason", err.Error())
		return
	}
	_ = client.SetReadDeadline(time.Time{})
	r := c.table.Load().match(serverName)
	if r == nil {
		logger.V(2).Info("closing a connection: no Ingress routes its server name", "serverName", serverName)
		return
	}
	backend, err := r.endpoints.Dial(c.cfg.DialTimeout)
	if err != nil {
		logger.V(2).Info("closing a connection", "serverName", serverName, "service", r.backend.namespace+"/"+r.backend.service, "reason", err.Error())
		return
	}
	defer backend.Close()
	if _, err := backend.Write(hello); err != nil {
		logger.V(2).Info("closing a connection: replaying the ClientHello failed", "serverName", serverName, "reason", err.Error())
		return
	}
	tcprelay.Pipe(client, backend)
}
