package server

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/servers/concierge/internal/controllers/csrstrategy"
	"sealion.dev/servers/concierge/internal/controllers/impersonationproxy"
	"sealion.dev/servers/concierge/internal/controllers/kubecertagent"
	"sealion.dev/servers/concierge/internal/credential"
	"sealion.dev/servers/concierge/internal/credentialissuer"
	"sealion.dev/servers/concierge/internal/csrsigner"
	"sealion.dev/servers/concierge/internal/dynamicca"
	"sealion.dev/servers/concierge/internal/impersonator"
	"sealion.dev/servers/concierge/internal/satoken"
)

// defaultCredentialIssuerSpec is the spec of the CredentialIssuer the Concierge creates when the
// install's is missing: the install's.
var defaultCredentialIssuerSpec = configv1alpha1.CredentialIssuerSpec{
	ImpersonationProxy: &configv1alpha1.ImpersonationProxySpec{
		Mode: configv1alpha1.ImpersonationProxyModeAuto,
		Service: configv1alpha1.ImpersonationProxyServiceSpec{
			Type:        configv1alpha1.ImpersonationProxyServiceTypeLoadBalancer,
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout": "4000"},
		},
	},
}

// conciergePodSelector selects the Concierge's own pods (see deploy/04-deployment.yaml).
var conciergePodSelector = map[string]string{"deployment.pinniped.dev": "concierge"}

// impersonationProxy builds the proxy, the controller that runs it, and the watcher of the
// cluster's client CA. Client certificates are accepted from that CA and from both signers the
// exchanger issues with; only the proxy's own signer's carry user extras.
func (c completedConfig) impersonationProxy(clusterSigner, proxySigner *dynamicca.Signer, exchanger *credential.Exchanger) ([]runner, error) {
	clusterClientCA, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", metav1.NamespaceSystem,
		"extension-apiserver-authentication", "client-ca-file", c.KubeClient)
	if err != nil {
		return nil, fmt.Errorf("impersonation proxy: watching the cluster's client CA: %w", err)
	}
	authn, err := impersonator.DelegatedAuthenticator(c.KubeClient, impersonator.ClientCAs{
		Own:    impersonator.CAContent("impersonation proxy signer", proxySigner),
		Others: []dynamiccertificates.CAContentProvider{clusterClientCA, impersonator.CAContent("token credential request signer", clusterSigner)},
	})
	if err != nil {
		return nil, err
	}
	authz, err := impersonator.DelegatedAuthorizer(c.KubeClient)
	if err != nil {
		return nil, err
	}
	apiServer, err := c.impersonationProxyAPIServer()
	if err != nil {
		return nil, err
	}
	loginGroup, _ := groupsuffix.Replace(loginv1alpha1.GroupName, *c.File.APIGroupSuffix) // a pinniped.dev group always has one
	handler, err := impersonator.New(impersonator.Config{
		APIServer:                  apiServer,
		Authenticator:              authn,
		Authorizer:                 authz,
		TokenCredentialRequests:    impersonator.TokenCredentialRequestHandler(loginGroup, exchanger),
		TokenCredentialRequestPath: impersonator.TokenCredentialRequestPath(loginGroup),
		TracerProvider:             c.Tracer.Provider(),
	})
	if err != nil {
		return nil, err
	}
	ciInformer := c.CRInformers.Config().V1alpha1().CredentialIssuers()
	controller := impersonationproxy.New(impersonationproxy.Config{
		Namespace:               c.Namespace,
		CredentialIssuerName:    c.File.Names.CredentialIssuer,
		DefaultSpec:             *defaultCredentialIssuerSpec.ImpersonationProxy,
		LoadBalancerServiceName: c.File.Names.ImpersonationLoadBalancerService,
		ClusterIPServiceName:    c.File.Names.ImpersonationClusterIPService,
		SignerSecretName:        c.File.Names.ImpersonationSignerSecret,
		ServingCASecretName:     c.File.Names.ImpersonationCACertificateSecret,
		ServingCertSecretName:   c.File.Names.ImpersonationTLSCertificateSecret,
		LegacySecretName:        c.File.Names.ImpersonationProxyLegacySecret,
		Selector:                conciergePodSelector,
		Labels:                  c.File.Labels,
		Address:                 c.ImpersonationProxyAddress,
		Port:                    int32(*c.File.ImpersonationProxyServerPort),
		TLS:                     c.File.TLSProfile,
	}, c.KubeClient, impersonationproxy.Informers{
		CredentialIssuers: ciInformer,
		Services:          c.NamespaceInformers.Core().V1().Services(),
		Secrets:           c.NamespaceInformers.Core().V1().Secrets(),
	}, handler, proxySigner, &credentialissuer.Updater{
		Client:       c.ConciergeClient,
		Lister:       ciInformer.Lister(),
		Name:         c.File.Names.CredentialIssuer,
		Labels:       c.File.Labels,
		Spec:         defaultCredentialIssuerSpec,
		LeaveMissing: c.File.CredentialIssuerCreatedByInstall,
	})
	return []runner{runFunc(func(ctx context.Context) { clusterClientCA.Run(ctx, 1) }), controller}, nil
}

// impersonationProxyAPIServer is how the proxy reaches the kube-apiserver: as the ServiceAccount
// names.impersonationProxyServiceAccount, allowed only to impersonate, with tokens the Concierge
// requests for it. Every replica serves the proxy, so the requests are sent with RESTConfig, not
// the controllers' client, whose creates only the leader may send.
func (c completedConfig) impersonationProxyAPIServer() (*rest.Config, error) {
	client, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("impersonation proxy: client for its ServiceAccount's tokens: %w", err)
	}
	return satoken.Config(c.RESTConfig, client.CoreV1(), c.Namespace, c.File.Names.ImpersonationProxyServiceAccount), nil
}

// kubeCertAgent builds the controller that feeds signer with the cluster signing key, and the
// informer factories it needs besides the Config's.
func (c completedConfig) kubeCertAgent(signer *dynamicca.Signer) ([]informerFactory, *kubecertagent.Controller) {
	// Only kube-controller-manager pods are watched in kube-system.
	kubeSystem := kubeinformers.NewSharedInformerFactoryWithOptions(c.KubeClient, 0,
		kubeinformers.WithNamespace(kubecertagent.ControllerManagerNamespace),
		kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = kubecertagent.ControllerManagerLabel }))
	cluster := kubeinformers.NewSharedInformerFactory(c.KubeClient, 0)
	informers := kubecertagent.Informers{
		ControllerManagerPods: kubeSystem.Core().V1().Pods(),
		Nodes:                 cluster.Core().V1().Nodes(),
		Pods:                  c.NamespaceInformers.Core().V1().Pods(),
		Deployments:           c.NamespaceInformers.Apps().V1().Deployments(),
		CredentialIssuers:     c.CRInformers.Config().V1alpha1().CredentialIssuers(),
	}
	agent := kubecertagent.New(kubecertagent.Config{
		CredentialIssuer:   c.File.Names.CredentialIssuer,
		Namespace:          c.Namespace,
		DeploymentName:     c.File.AgentDeploymentName(),
		ServiceAccountName: c.File.Names.AgentServiceAccount,
		Image:              c.File.KubeCertAgent.Image,
		OwnPodName:         c.PodName,
		ImagePullSecrets:   c.File.KubeCertAgent.ImagePullSecrets,
		PriorityClassName:  c.File.KubeCertAgent.PriorityClassName,
		Labels:             c.File.Labels,
		DiscoveryURL:       ptr.Deref(c.File.Discovery.URL, ""),
		RunAsUser:          c.File.KubeCertAgent.RunAsUser,
		RunAsGroup:         c.File.KubeCertAgent.RunAsGroup,
		DeploymentStrategy: appsv1.DeploymentStrategyType(ptr.Deref(c.File.KubeCertAgent.DeploymentStrategyType, "")),
	}, c.KubeClient, informers,
		&kubecertagent.PodExecutor{Config: c.RESTConfig, Client: c.KubeClient},
		signer,
		&credentialissuer.Updater{
			Client:       c.ConciergeClient,
			Lister:       informers.CredentialIssuers.Lister(),
			Name:         c.File.Names.CredentialIssuer,
			Labels:       c.File.Labels,
			Spec:         defaultCredentialIssuerSpec,
			LeaveMissing: c.File.CredentialIssuerCreatedByInstall,
		})
	return []informerFactory{kubeSystem, cluster}, agent
}

// certificateSigningRequests builds the CertificateSigningRequest strategy: the controller that
// probes the cluster's kubernetes.io/kube-apiserver-client signer and reports it, and the issuer
// that uses it while it works. Every replica creates requests for the TokenCredentialRequests it
// serves, so the issuer's client is not the controllers' (whose writes only the leader makes).
func (c completedConfig) certificateSigningRequests() (*csrstrategy.Controller, *csrstrategy.Issuer, error) {
	client, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, nil, err
	}
	signer := &csrsigner.Issuer{Client: client}
	credentialIssuers := c.CRInformers.Config().V1alpha1().CredentialIssuers()
	controller := csrstrategy.New(csrstrategy.Config{
		CredentialIssuer: c.File.Names.CredentialIssuer,
		Signer:           signer,
		Kube:             c.KubeClient,
		RESTConfig:       c.RESTConfig,
		APIGroupSuffix:   *c.File.APIGroupSuffix,
		DiscoveryURL:     ptr.Deref(c.File.Discovery.URL, ""),
		Status: &credentialissuer.Updater{
			Client:       c.ConciergeClient,
			Lister:       credentialIssuers.Lister(),
			Name:         c.File.Names.CredentialIssuer,
			Labels:       c.File.Labels,
			Spec:         defaultCredentialIssuerSpec,
			LeaveMissing: c.File.CredentialIssuerCreatedByInstall,
		},
		Leading: c.Elector.IsLeader,
	}, credentialIssuers)
	return controller, &csrstrategy.Issuer{Signer: signer, CredentialIssuers: credentialIssuers.Lister(), CredentialIssuer: c.File.Names.CredentialIssuer}, nil
}
